import type { FieldError } from '../../kernel/errors.js';
import type { Customer } from '../customers/schemas.js';
import type { Verification } from '../verifications/schemas.js';
import type { KycPageModel, LinkState } from './service.js';

// Server-rendered HTML of the hosted KYC page: no scripts, no external assets.

export function esc(s: unknown): string {
  return String(s ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

const STYLE = `
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:#f4f5f7;color:#1d2330;margin:0;padding:2rem 1rem}
main{max-width:40rem;margin:0 auto;background:#fff;border-radius:12px;box-shadow:0 1px 4px rgba(0,0,0,.08);padding:2rem}
h1{font-size:1.5rem;margin:0 0 .5rem}h2{font-size:1.1rem;margin:1.75rem 0 .75rem;border-bottom:1px solid #e3e6eb;padding-bottom:.35rem}
p.sub{color:#5b6474;margin:0 0 1.25rem}.badge{display:inline-block;font-size:.8rem;background:#eef1f6;border-radius:999px;padding:.1rem .6rem;color:#3d4656}
ul.missing{background:#fff8e6;border:1px solid #f3d58b;border-radius:8px;padding:.75rem 1rem .75rem 2rem}
ul.missing li{margin:.2rem 0}.ok{background:#e9f7ef;border:1px solid #9fd8b5;border-radius:8px;padding:.75rem 1rem}
.error{background:#fdecec;border:1px solid #f0a8a8;border-radius:8px;padding:.75rem 1rem}
label{display:block;font-weight:600;font-size:.9rem;margin:.8rem 0 .25rem}label .hint{font-weight:400;color:#6b7383}
input,select{width:100%;box-sizing:border-box;padding:.5rem .6rem;border:1px solid #c7ccd6;border-radius:6px;font-size:1rem}
.row{display:grid;grid-template-columns:1fr 1fr;gap:0 1rem}.need input,.need select{border-color:#e0a100}
.bad input,.bad select{border-color:#d33}.msg{color:#b32020;font-size:.85rem;margin-top:.2rem}
button{margin-top:1.5rem;width:100%;padding:.75rem;border:0;border-radius:8px;background:#2450d8;color:#fff;font-size:1rem;font-weight:600;cursor:pointer}
a.back{display:inline-block;margin-top:1rem}footer{max-width:40rem;margin:1rem auto;color:#8a91a0;font-size:.8rem;text-align:center}
`;

export function layout(title: string, body: string): string {
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">` +
    `<meta name="robots" content="noindex"><title>${esc(title)}</title><style>${STYLE}</style></head>` +
    `<body><main>${body}</main><footer>Identity verification · sandbox · provider SUMSUB (emulated)</footer></body></html>`
  );
}

function backLink(redirectUri: string | null): string {
  return redirectUri ? `<p><a class="back" href="${esc(redirectUri)}">Return to ${esc(hostOf(redirectUri))}</a></p>` : '';
}

function hostOf(uri: string): string {
  try {
    return new URL(uri).host;
  } catch {
    return uri;
  }
}

/** A page for a link that cannot be used: unknown (404), used or expired (410), or its customer gone (410). */
export function closedPage(state: Exclude<LinkState, { kind: 'open' }>): { status: number; html: string } {
  switch (state.kind) {
    case 'unknown':
      return {
        status: 404,
        html: layout('Link not found', `<h1>This verification link does not exist</h1><p class="sub">Check that the address is complete, or ask for a new link.</p>`),
      };
    case 'used':
      return {
        status: 410,
        html: layout(
          'Link already used',
          `<h1>This link was already used</h1><p class="sub">The verification was submitted with this link on ${esc(state.usedAt)}. ` +
            `Each link works once; ask for a new link if you need to submit again.</p>${backLink(state.redirectUri)}`,
        ),
      };
    case 'expired':
      return {
        status: 410,
        html: layout('Link expired', `<h1>This link has expired</h1><p class="sub">It was valid until ${esc(state.expiresAt)}. Ask for a new verification link.</p>`),
      };
    case 'gone':
      return {
        status: 410,
        html: layout('Verification unavailable', `<h1>This verification is no longer available</h1><p class="sub">The customer it was issued for no longer exists.</p>`),
      };
  }
}

interface Input {
  name: string;
  label: string;
  type?: string;
  hint?: string;
  options?: readonly string[];
  placeholder?: string;
  /** Keys of `missing` fields that this input satisfies. */
  missingKey?: string;
}

const OPTION_LABELS: Record<string, string> = { SSN: 'SSN (US)', ITIN: 'ITIN (US)', NON_US_TAX_ID: 'Tax id outside the US' };

/** PASSPORT → "Passport", DRIVERS_LICENSE → "Drivers license". */
function sentence(code: string): string {
  const s = code.replace(/_/g, ' ').toLowerCase();
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** Fields the verification asks for, and why: absent ('missing') or present but refused ('invalid'). */
type FieldNeeds = Map<string, 'missing' | 'invalid'>;

function fieldHtml(model: KycPageModel, input: Input, errors: FieldError[], missingFields: FieldNeeds): string {
  const own = errors.filter((e) => e.field === input.name || e.field.startsWith(`${input.name}.`));
  const need = input.missingKey !== undefined ? missingFields.get(input.missingKey) : undefined;
  const value = model.values[input.name] ?? '';
  const id = `f-${input.name.replace(/[^A-Za-z0-9]/g, '-')}`;
  const control = input.options
    ? `<select id="${id}" name="${esc(input.name)}"><option value=""${value === '' ? ' selected' : ''}>Choose…</option>` +
      input.options.map((o) => `<option value="${esc(o)}"${o === value ? ' selected' : ''}>${esc(OPTION_LABELS[o] ?? sentence(o))}</option>`).join('') +
      `</select>`
    : input.type === 'file'
      ? `<input id="${id}" type="file" name="${esc(input.name)}" accept=".jpg,.jpeg,.png,.pdf,image/jpeg,image/png,application/pdf">`
      : `<input id="${id}" type="${input.type ?? 'text'}" name="${esc(input.name)}" value="${esc(value)}"${input.placeholder ? ` placeholder="${esc(input.placeholder)}"` : ''}>`;
  const cls = [own.length > 0 ? 'bad' : '', need ? 'need' : ''].filter(Boolean).join(' ');
  return (
    `<div${cls ? ` class="${cls}"` : ''}><label for="${id}">${esc(input.label)}${input.hint ? ` <span class="hint">${esc(input.hint)}</span>` : ''}${need ? ` <span class="badge">${need}</span>` : ''}</label>` +
    control +
    own.map((e) => `<div class="msg">${esc(e.message)}</div>`).join('') +
    `</div>`
  );
}

function missingList(model: KycPageModel): string {
  if (model.settled) return `<p class="ok">Your verification is complete (status ${esc(model.status)}). Nothing else is needed.</p>`;
  if (model.missing.length === 0) return `<p class="ok">Everything needed is on file. Submit to complete your verification.</p>`;
  return (
    `<p>Still needed:</p><ul class="missing">` +
    model.missing
      .map((m) => {
        const what = (m.type === 'MISSING_FIELD' || m.type === 'INVALID_FIELD') && m.field ? `<strong>${esc(m.field)}</strong>: ` : '';
        const types = m.acceptedDocumentTypes?.length ? ` <span class="hint">(${esc(m.acceptedDocumentTypes.join(', '))})</span>` : '';
        return `<li>${what}${esc(m.reason)}${types}</li>`;
      })
      .join('') +
    `</ul>`
  );
}

const COUNTRY_HINT = '(two-letter code, e.g. FR)';

/** The form: the customer's data (prefilled), the address and one document. */
export function formPage(model: KycPageModel, opts: { errors?: FieldError[]; message?: string; notice?: string } = {}): string {
  const errors = opts.errors ?? [];
  const missingFields: FieldNeeds = new Map(
    model.missing.flatMap((m): Array<[string, 'missing' | 'invalid']> =>
      m.type === 'INVALID_FIELD' && m.field ? [[m.field, 'invalid']] : m.type === 'MISSING_FIELD' && m.field ? [[m.field, 'missing']] : m.acceptedDocumentTypes ? [['document', 'missing']] : [],
    ),
  );
  const f = (i: Input) => fieldHtml(model, i, errors, missingFields);
  const business = model.customerType === 'BUSINESS';
  const head =
    `<h1>${business ? 'Verify your business' : 'Verify your identity'}</h1>` +
    `<p class="sub">${esc(model.displayName)} <span class="badge">${business ? 'KYB' : 'KYC'} · ${esc(model.status)}</span></p>` +
    (opts.message ? `<div class="error">${esc(opts.message)}${errorsWithoutInput(errors)}</div>` : '') +
    (opts.notice ? `<div class="error">${esc(opts.notice)}</div>` : '') +
    missingList(model);
  if (model.settled) return layout('Verification complete', head + backLink(model.redirectUri));

  const address =
    `<h2>${business ? 'Registered address' : 'Residential address'}</h2>` +
    f({ name: 'address.line1', label: 'Address line 1', missingKey: 'address' }) +
    f({ name: 'address.line2', label: 'Address line 2', hint: '(optional)' }) +
    `<div class="row">${f({ name: 'address.city', label: 'City' })}${f({ name: 'address.state', label: 'State / region', hint: '(optional)' })}</div>` +
    `<div class="row">${f({ name: 'address.postalCode', label: 'Postal code', missingKey: 'address' })}${f({ name: 'address.country', label: 'Country', hint: COUNTRY_HINT, missingKey: 'address' })}</div>`;

  const details = business
    ? `<h2>Business information</h2>` +
      f({ name: 'businessInfo.legalName', label: 'Legal name', missingKey: 'businessInfo.legalName' }) +
      `<div class="row">${f({ name: 'businessInfo.registrationNumber', label: 'Registration number', missingKey: 'businessInfo.registrationNumber' })}${f({ name: 'businessInfo.taxId', label: 'Tax id', missingKey: 'businessInfo.taxId' })}</div>` +
      `<div class="row">${f({ name: 'businessInfo.country', label: 'Country of incorporation', hint: COUNTRY_HINT, missingKey: 'businessInfo.country' })}${f({ name: 'businessInfo.incorporatedOn', label: 'Incorporated on', type: 'date', missingKey: 'businessInfo.incorporatedOn' })}</div>`
    : `<h2>Personal details</h2>` +
      f({ name: 'fullName', label: 'Full name', missingKey: 'fullName' }) +
      `<div class="row">${f({ name: 'birthDate', label: 'Date of birth', type: 'date', missingKey: 'birthDate' })}${f({ name: 'nationality', label: 'Nationality', hint: COUNTRY_HINT, missingKey: 'nationality' })}</div>` +
      `<div class="row">${f({ name: 'idType', label: 'Identification type', options: ['SSN', 'ITIN', 'NON_US_TAX_ID'], missingKey: 'idType' })}${f({
        name: 'identifier',
        label: 'Identification number',
        missingKey: 'identifier',
        ...(model.identifierOnFile ? { placeholder: 'on file; leave empty to keep it' } : {}),
      })}</div>` +
      f({ name: 'countryOfIssuance', label: 'Country that issued the number', hint: `${COUNTRY_HINT}, needed for NON_US_TAX_ID` });

  const document =
    `<h2>${business ? 'Proof the business exists' : 'Identity document'}</h2>` +
    `<div class="row">${f({ name: 'documentType', label: 'Document type', options: model.documentTypes })}${f({ name: 'documentCountry', label: 'Issuing country', hint: COUNTRY_HINT })}</div>` +
    f({ name: 'documentNumber', label: 'Document number', hint: '(optional)' }) +
    f({ name: 'document', label: 'File', type: 'file', hint: '(JPEG, PNG or PDF, at most 10 MB)', missingKey: 'document' });

  const owners = model.missing.some((m) => m.type === 'MISSING_BENEFICIAL_OWNER')
    ? `<h2>Beneficial owners</h2><p class="sub">At least one beneficial owner is needed. Your platform adds them for you; contact them if this stays listed.</p>`
    : '';

  return layout(
    business ? 'Verify your business' : 'Verify your identity',
    head +
      `<form method="post" action="${esc(`/hosted/kyc/${encodeURIComponent(model.token)}`)}" enctype="multipart/form-data">` +
      details +
      address +
      document +
      owners +
      `<button type="submit">Submit for verification</button></form>` +
      `<p class="sub" style="margin-top:1rem">This link works once and expires ${esc(model.expiresAt)}.</p>`,
  );
}

/** Errors whose field has no input on the page, listed in the banner. */
function errorsWithoutInput(errors: FieldError[]): string {
  const known = /^(fullName|birthDate|nationality|idType|identifier|countryOfIssuance|address\..+|businessInfo\.(legalName|registrationNumber|taxId|country|incorporatedOn)|documentType|documentCountry|documentNumber|document)$/;
  const rest = errors.filter((e) => !known.test(e.field));
  return rest.length ? `<ul>${rest.map((e) => `<li>${esc(e.field)}: ${esc(e.message)}</li>`).join('')}</ul>` : '';
}

const OUTCOME: Record<string, { title: string; text: string }> = {
  APPROVED: { title: 'You are verified', text: 'Your verification was approved. You can close this page.' },
  PENDING_MANUAL_REVIEW: { title: 'Verification submitted', text: 'Thank you. Your information is being reviewed; you will be told when it is done.' },
  REJECTED: { title: 'Verification not approved', text: 'Your verification could not be approved. Contact the service that sent you this link.' },
};

export function donePage(verification: Verification, customer: Customer, redirectUri: string | null): string {
  const o = OUTCOME[verification.verificationStatus] ?? { title: 'Verification submitted', text: 'Thank you.' };
  const status = customer.customerType === 'BUSINESS' ? customer.kybStatus : customer.kycStatus;
  return layout(
    o.title,
    `<h1>${esc(o.title)}</h1><p class="sub">${esc(o.text)}</p>` +
      `<p class="ok">Verification status: <strong>${esc(verification.verificationStatus)}</strong> · ${customer.customerType === 'BUSINESS' ? 'KYB' : 'KYC'} status: <strong>${esc(status)}</strong></p>` +
      backLink(redirectUri),
  );
}

export function errorPage(status: number, message: string): string {
  return layout('Something went wrong', `<h1>${status >= 500 ? 'Something went wrong' : 'This request could not be handled'}</h1><p class="sub">${esc(message)}</p>`);
}
