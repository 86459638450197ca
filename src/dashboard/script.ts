// The dashboard's one script (served at /dashboard/app.js). Plain browser JavaScript, no
// framework, no build step: it reads the platform's own API (Basic auth with the API token
// pair) or, signed in with the operator key, the /admin operator API (Bearer).
export const DASHBOARD_SCRIPT = String.raw`
const V = '/2025-10-13';
const $ = (s) => document.querySelector(s);
const esc = (v) => String(v ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
const auth = () => sessionStorage.getItem('auth');
const operator = () => sessionStorage.getItem('admin');
const enc = encodeURIComponent;

// Every request says it is the dashboard's (X-Payments-Dashboard: 1): the request log marks it
// and hides the dashboard's reads unless asked, so the platform's own calls stay in view.
async function call(url, authorization, method, body) {
  const res = await fetch(url, { method, headers: { authorization, 'x-payments-dashboard': '1', ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined });
  const text = await res.text();
  const json = text ? JSON.parse(text) : null;
  if (!res.ok) { const e = new Error(res.status + ' ' + (json && json.code) + ': ' + (json && json.message)); e.status = res.status; e.body = json; throw e; }
  return json;
}
/** The platform's API (path under the version prefix). */
const api = (method, path, body) => call(V + path, auth(), method, body);
/** The operator API (path under /admin). */
const admin = (method, path, body) => call('/admin' + path, operator(), method, body);
/** A GET that answers null instead of failing (a part of a page the API may not offer). */
const maybe = (path) => api('GET', path).catch(() => null);

// ---- Rendering helpers ---------------------------------------------------------------------

/** The page of an id, from its type prefix; an id of another kind opens the search. */
const ROUTES = { Customer: 'customer', Transaction: 'transaction', Quote: 'quote', InternalAccount: 'account', Agent: 'agents', Card: 'cards' };
function link(id, label) {
  if (!id) return '';
  const kind = String(id).split(':')[0];
  const page = ROUTES[kind];
  const href = page === 'agents' || page === 'cards' ? '#' + page : page ? '#' + page + '/' + enc(id) : '#search/' + enc(id);
  return '<a href="' + href + '" title="' + esc(id) + '">' + esc(label || short(id)) + '</a>';
}
/** "Customer:019a…e3f1": the type and the ends of the uuid, the whole id in the title. */
const short = (id) => { const [k, u] = String(id).split(':'); return u && u.length > 12 ? k + ':' + u.slice(0, 8) + '…' + u.slice(-4) : String(id); };
const money = (a) => a ? esc(fmt(a.amount, a.currency && a.currency.decimals)) + ' ' + esc(a.currency && a.currency.code) : '';
const fmt = (n, d) => d ? (Number(n) / 10 ** d).toFixed(d) : String(n);
const when = (t) => t ? '<span title="' + esc(t) + '">' + esc(String(t).replace('T', ' ').replace(/\.\d+Z$|Z$/, '')) + '</span>' : '';
const badge = (s) => s ? '<span class="st st-' + esc(String(s).toLowerCase()) + '">' + esc(s) + '</span>' : '';
function table(cols, rows, empty) {
  return '<table><tr>' + cols.map((c) => '<th>' + esc(c[0]) + '</th>').join('') + '</tr>' +
    rows.map((r) => '<tr>' + cols.map((c) => '<td>' + c[1](r) + '</td>').join('') + '</tr>').join('') + '</table>' +
    (rows.length ? '' : '<p class="muted">' + esc(empty || 'Nothing yet.') + '</p>');
}
const json = (v) => '<details><summary>JSON</summary><pre>' + esc(JSON.stringify(v, null, 2)) + '</pre></details>';
const excerpt = (s) => s ? '<code>' + esc(String(s).slice(0, 120)) + (String(s).length > 120 ? '…' : '') + '</code>' : '';
/** A button that runs ACTIONS[name] with its data-* attributes. */
const btn = (name, label, data) => '<button data-act="' + name + '"' + Object.entries(data || {}).map(([k, v]) => ' data-' + k + '="' + esc(v) + '"').join('') + '>' + esc(label) + '</button>';
const count = (page) => page ? (page.totalCount ?? page.data.length) : '–';
const h2 = (t, extra) => '<h2>' + esc(t) + '</h2>' + (extra || '');

// ---- The form dialog (instead of prompt()) -------------------------------------------------

/** Ask for fields [[name, label, default]] in the dialog; resolves with the values, or null when cancelled. */
function ask(title, fields) {
  const dlg = $('#ask');
  dlg.innerHTML = '<form method="dialog"><h3>' + esc(title) + '</h3>' +
    fields.map((f) => '<label>' + esc(f[1]) + '<input name="' + esc(f[0]) + '" value="' + esc(f[2] ?? '') + '"></label>').join('') +
    '<p><button value="ok" id="ask-ok">OK</button> <button value="cancel" formnovalidate>Cancel</button></p></form>';
  return new Promise((resolve) => {
    const form = dlg.querySelector('form');
    dlg.onclose = () => resolve(dlg.returnValue === 'ok' ? Object.fromEntries(new FormData(form)) : null);
    dlg.returnValue = '';
    dlg.showModal();
  });
}

/** Run an action, say what it did (or why not), and draw the page again. */
async function act(what, fn) {
  try { await fn(); note(what + '.'); await render(); }
  catch (e) { note(what + ': ' + e.message, true); }
}
function note(text, bad) { const n = $('#note'); n.textContent = text; n.className = bad ? 'err' : 'ok'; }

// ---- Sandbox actions (buttons carry data-act="<name>") --------------------------------------

const ACTIONS = {
  advance: async () => { const v = await ask('Advance the sandbox clock', [['seconds', 'Seconds', '60']]); if (v) return act('Clock advanced', () => api('POST', '/sandbox/clock/advance', { seconds: Number(v.seconds) })); },
  testWebhook: () => act('Test webhook', () => api('POST', '/sandbox/webhooks/test')),
  seed: () => act('Seed', () => api('POST', '/sandbox/seed')),
  reset: () => confirm('Reset this platform? Everything it made in the sandbox is deleted.') && act('Reset', () => api('POST', '/sandbox/reset')),
  fund: async (d) => { const v = await ask('Fund ' + d.id, [['amount', 'Amount (smallest unit, e.g. cents)', '10000']]); if (v) return act('Funded', () => api('POST', '/sandbox/internal-accounts/' + enc(d.id) + '/fund', { amount: Number(v.amount) })); },
  receive: async (d) => {
    const v = await ask('Simulate an incoming UMA payment', [['senderUmaAddress', 'Sender (a sandbox UMA address)', '$success.usd@sandbox.uma.money'], ['customerId', 'Receiving customer id', d.customer || ''], ['receivingCurrencyCode', 'Currency', 'USD'], ['receivingCurrencyAmount', 'Amount (smallest unit)', '5000']]);
    if (v) return act('Incoming payment', () => api('POST', '/sandbox/uma/receive', { ...v, receivingCurrencyAmount: Number(v.receivingCurrencyAmount) }));
  },
  approve: (d) => act('Approved', () => api('POST', '/transactions/' + enc(d.id) + '/approve', {})),
  reject: async (d) => { const v = await ask('Reject ' + d.id, [['reason', 'Reason', 'Rejected from the dashboard']]); if (v) return act('Rejected', () => api('POST', '/transactions/' + enc(d.id) + '/reject', v.reason ? { reason: v.reason } : {})); },
  approveAction: (d) => act('Action approved', () => api('POST', '/agents/' + enc(d.agent) + '/actions/' + enc(d.id) + '/approve', {})),
  rejectAction: async (d) => { const v = await ask('Reject the agent action', [['reason', 'Reason', 'Rejected from the dashboard']]); if (v) return act('Action rejected', () => api('POST', '/agents/' + enc(d.agent) + '/actions/' + enc(d.id) + '/reject', v.reason ? { reason: v.reason } : {})); },
  redeliver: (d) => act('Redelivery scheduled', () => api('POST', '/sandbox/webhook-deliveries/' + enc(d.id) + '/redeliver')),
  resetPlatform: (d) => confirm('Reset platform ' + d.id + '?') && act('Platform reset', () => admin('POST', '/platforms/' + enc(d.id) + '/reset')),
  resetAll: () => confirm('Reset every platform?') && act('Every platform reset', () => admin('POST', '/sandbox/reset')),
  addFault: async () => {
    const v = await ask('Add a fault rule (POST /sandbox/faults; leave a field empty to omit it)', [['kind', 'Kind: INTERNAL_ERROR, SERVICE_UNAVAILABLE, RATE_LIMITED, DELAY, COMMIT_THEN_DROP, WEBHOOK_DELAY, WEBHOOK_DUPLICATE, WEBHOOK_OUT_OF_ORDER', 'INTERNAL_ERROR'],
      ['operation', 'Operation: an operationId (createQuote), METHOD /path (POST /quotes) or * (none for webhook kinds)', 'createQuote'], ['count', 'Count: the next N calls', '1'], ['durationSeconds', 'Or for this many seconds (real time)', ''],
      ['fraction', 'With a duration: the share of calls (0 to 1]', ''], ['delayMs', 'Delay in ms (DELAY, WEBHOOK_DELAY)', ''], ['retryAfterSeconds', 'Retry-After in seconds (SERVICE_UNAVAILABLE, RATE_LIMITED)', '']]);
    if (!v) return;
    const body = {};
    for (const [k, x] of Object.entries(v)) if (String(x).trim() !== '') body[k] = k === 'kind' || k === 'operation' ? String(x).trim() : Number(x);
    return act('Fault rule added', () => api('POST', '/sandbox/faults', body));
  },
  removeFault: (d) => act('Fault rule removed', () => api('DELETE', '/sandbox/faults/' + enc(d.id))),
  clearFaults: () => confirm('Remove every fault rule?') && act('Fault rules removed', () => api('DELETE', '/sandbox/faults')),
  toggleDashboardReads: () => { showDashboardReads = !showDashboardReads; return render(); },
  addCurrency: () => { $('#currencies').insertAdjacentHTML('beforeend', currencyRow({ enabledTransactionTypes: TYPES, requiredCounterpartyFields: [{ name: 'FULL_NAME', mandatory: true }] })); renumber($('#config-form')); },
  addFee: () => { $('#fees').insertAdjacentHTML('beforeend', feeRow({ sourceCurrency: 'USD', variableFeeBps: 0, fixedFee: { amount: 0, currency: 'USD' } }, false)); renumber($('#config-form')); },
  removeRow: (d, b) => { const tr = b.closest('tr'); if (tr.dataset.stored) { tr.dataset.removed = '1'; tr.hidden = true; } else tr.remove(); renumber($('#config-form')); },
  testWebhookSettings: async () => {
    const out = $('#test-result');
    out.className = 'muted';
    out.textContent = 'sending…';
    try {
      const r = await api('POST', '/sandbox/webhooks/test');
      out.className = 'ok';
      out.textContent = 'Sent to ' + r.url + ': answered ' + r.response_status + (r.response_body ? ' ' + String(r.response_body).slice(0, 120) : '');
    } catch (e) { out.className = 'err'; out.textContent = e.message; }
  },
};
document.addEventListener('click', (e) => {
  const b = e.target.closest && e.target.closest('button[data-act]');
  if (b) { e.preventDefault(); ACTIONS[b.dataset.act](b.dataset, b); }
});

// ---- Timelines -----------------------------------------------------------------------------

/** The states and events of a resource: its own times plus every webhook event about it (with the delivery's status). Deliveries are listed newest first: reversed, so events of the same millisecond keep the order they were made in (the sort is stable). */
async function timeline(points, resourceIds) {
  const lists = await Promise.all(resourceIds.filter(Boolean).map((id) => api('GET', '/sandbox/webhook-deliveries?limit=100&resourceId=' + enc(id))));
  const events = lists.flatMap((l) => l.data.slice().reverse()).map((d) => [d.createdAt, d.type, 'webhook ' + d.status.toLowerCase() + (d.attempts ? ' after ' + d.attempts + ' attempt(s)' : '') + (d.lastStatusCode ? ', answered ' + d.lastStatusCode : '')]);
  const all = [...points.filter((p) => p[0]), ...events].sort((a, b) => String(a[0]).localeCompare(String(b[0])));
  return '<ol class="timeline">' + all.map((p) => '<li>' + when(p[0]) + ' <b>' + esc(p[1]) + '</b> <span class="muted">' + esc(p[2] || '') + '</span></li>').join('') + '</ol>';
}

async function allInternalAccounts() {
  const [c, p] = await Promise.all([api('GET', '/customers/internal-accounts?limit=100'), api('GET', '/platform/internal-accounts')]);
  return [...p.data, ...c.data];
}

const accountCols = [['Account', (a) => link(a.id)], ['Customer', (a) => link(a.customerId) || 'platform'], ['Type', (a) => esc(a.type)], ['Available', (a) => money(a.balance)], ['Total', (a) => money(a.totalBalance)], ['Status', (a) => badge(a.status)],
  ['', (a) => btn('fund', 'Fund', { id: a.id }) + ' <a href="#account/' + enc(a.id) + '">Ledger</a>']];
const externalCols = [['External account', (a) => esc(short(a.id))], ['Customer', (a) => link(a.customerId) || 'platform'], ['Currency', (a) => esc(a.currency)], ['Type', (a) => esc(a.accountInfo && a.accountInfo.accountType)], ['Status', (a) => badge(a.status)],
  ['Beneficiary', (a) => { const b = a.accountInfo && a.accountInfo.beneficiary; return b ? esc(b.fullName || b.legalName) + ' <span class="muted">' + esc(b.beneficiaryType) + '</span>' : ''; }], ['Ownership', (a) => esc(a.ownershipType)]];
const txCols = [['Transaction', (t) => link(t.id)], ['Type', (t) => esc(t.type)], ['Status', (t) => badge(t.status)], ['Sent', (t) => money(t.sentAmount)], ['Received', (t) => money(t.receivedAmount)], ['Customer', (t) => link(t.customerId)],
  ['Updated', (t) => when(t.updatedAt)], ['', (t) => t.status === 'PENDING' ? btn('approve', 'Approve', { id: t.id }) + btn('reject', 'Reject', { id: t.id }) : '']];
const cardCols = [['Card', (c) => esc(short(c.id))], ['Cardholder', (c) => link(c.cardholderId)], ['State', (c) => badge(c.state)], ['Brand', (c) => esc(c.brand)], ['Form', (c) => esc(c.form)], ['Last 4', (c) => esc(c.last4)],
  ['Funding sources', (c) => c.fundingSources.map((id) => link(id)).join('<br>')], ['Created', (c) => when(c.createdAt)]];
const actionAmount = (x) => x.quote ? esc(fmt(x.quote.totalSendingAmount, x.quote.sendingCurrency && x.quote.sendingCurrency.decimals)) + ' ' + esc(x.quote.sendingCurrency && x.quote.sendingCurrency.code) : x.transferDetails ? esc(x.transferDetails.amount) + ' ' + esc(x.transferDetails.currency) : '';
const endpointOf = (s) => s ? (s.accountId ? link(s.accountId) : esc(s.umaAddress || s.sourceType || s.destinationType)) : '';

// ---- Settings: PATCH /config and PATCH /sandbox/settings --------------------------------------
// Each input carries the API's path of its field (data-field, e.g. "supportedCurrencies.0.minAmount"),
// so each field error of a 400 (details.errors[].field) is shown beside its field. Rows of a list
// carry data-list and inputs data-k (their key in the row); renumber() names them in form order.

/** Pages the 3-second timer does not read again (a form being edited). */
const STILL = ['settings'];
let showDashboardReads = false;
const fieldsText = (list) => (list || []).map((f) => f.name + (f.mandatory ? '' : '?')).join(', ');
const fieldsOf = (text) => String(text).split(',').map((x) => x.trim()).filter(Boolean).map((x) => x.endsWith('?') ? { name: x.slice(0, -1).trim(), mandatory: false } : { name: x, mandatory: true });
const inp = (field, value, extra) => '<input data-field="' + esc(field) + '" value="' + esc(value ?? '') + '"' + (extra || '') + '>';
const rowInp = (k, value, extra) => '<input data-k="' + esc(k) + '" value="' + esc(value ?? '') + '"' + (extra || '') + '>';
const labelled = (label, field, value, extra) => '<label>' + esc(label) + inp(field, value, extra) + '</label>';
const TYPES = ['INCOMING', 'OUTGOING'];
function currencyRow(c) {
  return '<tr data-list="supportedCurrencies"><td>' + rowInp('currencyCode', c.currencyCode, ' size="6"') + '</td><td>' + rowInp('minAmount', c.minAmount, ' size="12"') + '</td><td>' + rowInp('maxAmount', c.maxAmount, ' size="14"') + '</td>' +
    '<td><span data-k="enabledTransactionTypes">' + TYPES.map((x) => '<label class="inline"><input type="checkbox" data-type="' + x + '"' + ((c.enabledTransactionTypes || []).includes(x) ? ' checked' : '') + '> ' + x + '</label>').join(' ') + '</span></td>' +
    '<td>' + rowInp('requiredCounterpartyFields', fieldsText(c.requiredCounterpartyFields), ' size="36"') + '</td><td>' + btn('removeRow', 'Remove') + '</td></tr>';
}
function feeRow(f, stored) {
  return '<tr data-list="feeConfigs"' + (stored ? ' data-stored="1"' : '') + '><td><select data-k="feeType"><option>CROSS_CURRENCY_TRANSACTION</option></select></td><td>' + rowInp('sourceCurrency', f.sourceCurrency, ' size="6"') + '</td>' +
    '<td>' + rowInp('variableFeeBps', f.variableFeeBps, ' size="8"') + '</td><td>' + rowInp('fixedFee.amount', f.fixedFee && f.fixedFee.amount, ' size="10"') + '</td><td>' + rowInp('fixedFee.currency', f.fixedFee && f.fixedFee.currency, ' size="6"') + '</td><td>' + btn('removeRow', 'Remove') + '</td></tr>';
}
const WALLET = [['appName', 'App name'], ['otpLength', 'OTP length (4 to 12)'], ['expirationSeconds', 'OTP expiry (seconds)'], ['sendFromEmailAddress', 'Send from (email)'], ['sendFromEmailSenderName', 'Sender name'], ['replyToEmailAddress', 'Reply-to (email)'], ['logoUrl', 'Logo URL']];
const TWO_FA = [['displayName', 'Display name'], ['logoUrl', 'Logo URL (https)'], ['email.fromAddress', 'Email: from address'], ['email.fromName', 'Email: from name'], ['email.replyToAddress', 'Email: reply-to'],
  ['email.subject', 'Email: subject'], ['email.bodyText', 'Email: body'], ['sms.templateSid', 'SMS: template SID'], ['sms.bodyText', 'SMS: body']];
const pick = (o, path) => path.split('.').reduce((v, k) => (v == null ? undefined : v[k]), o);
function settingsForm(cfg) {
  const w = cfg.embeddedWalletConfig || {};
  return '<form id="config-form" class="settings"><p class="muted">Platform configuration (<code>PATCH /config</code>; the API checks every field and its errors show beside them).</p><p class="err" id="form-errors"></p>' +
    '<h3>General</h3>' + labelled('UMA domain', 'umaDomain', cfg.umaDomain, ' size="48"') +
    '<label>Webhook endpoint (empty: none)' + inp('webhookEndpoint', cfg.webhookEndpoint, ' size="60"') + '</label>' +
    '<p>' + btn('testWebhookSettings', 'Send test webhook') + ' <span class="muted">to the saved endpoint</span> <span id="test-result"></span></p>' +
    '<p class="muted">Regulated financial institution: <b>' + (cfg.isRegulatedFinancialInstitution ? 'yes' : 'no') + '</b> (fixed when the platform is created)</p>' +
    '<h3>Supported currencies</h3><p class="muted">Amounts in the smallest unit of the currency. Required counterparty fields: names separated by commas, a name ending in ? is optional (FULL_NAME, EMAIL?).</p>' +
    '<table data-field="supportedCurrencies"><thead><tr><th>Currency</th><th>Minimum</th><th>Maximum</th><th>Transaction types</th><th>Required counterparty fields</th><th></th></tr></thead><tbody id="currencies">' +
    cfg.supportedCurrencies.map(currencyRow).join('') + '</tbody></table>' + btn('addCurrency', 'Add a currency') +
    '<h3>Fees</h3><p class="muted">Charged on cross-currency transactions; a removed fee is sent with 0 bps and 0 fixed, which turns it off.</p>' +
    '<table data-field="feeConfigs"><thead><tr><th>Fee type</th><th>Source currency</th><th>Variable (bps)</th><th>Fixed amount</th><th>Fixed currency</th><th></th></tr></thead><tbody id="fees">' +
    cfg.feeConfigs.map((f) => feeRow(f, true)).join('') + '</tbody></table>' + btn('addFee', 'Add a fee') +
    '<h3>Card tokenization 2FA</h3><p class="muted">An empty field keeps what is stored (the API merges these settings).</p><fieldset data-field="cardTokenization2faConfig">' +
    TWO_FA.map((f) => labelled(f[1], 'cardTokenization2faConfig.' + f[0], pick(cfg.cardTokenization2faConfig, f[0]), ' size="48"')).join('') + '</fieldset>' +
    '<h3>Embedded wallets</h3><fieldset data-field="embeddedWalletConfig">' + WALLET.map((f) => labelled(f[1], 'embeddedWalletConfig.' + f[0], w[f[0]], ' size="48"')).join('') +
    '<label>Alphanumeric OTP <select data-field="embeddedWalletConfig.alphanumeric"><option value="">(unchanged)</option><option value="true"' + (w.alphanumeric === true ? ' selected' : '') + '>yes</option><option value="false"' + (w.alphanumeric === false ? ' selected' : '') + '>no</option></select></label></fieldset>' +
    '<p><button type="submit" id="save-config">Save settings</button></p></form>';
}
function sandboxForm(o) {
  const box = (k, label) => '<label class="inline"><input type="checkbox" data-field="' + k + '"' + (o[k] ? ' checked' : '') + '> ' + esc(label) + '</label>';
  return '<form id="sandbox-form" class="settings"><h3>Sandbox options</h3><p class="muted"><code>PATCH /sandbox/settings</code> (the operator API sets the same options).</p><p class="err" id="sandbox-errors"></p>' +
    '<p>' + box('skipVerificationPaperwork', 'Skip verification paperwork') + ' <span class="muted">the name suffix decides KYC/KYB with no documents (individuals at create, businesses at first submission)</span></p>' +
    '<p>' + box('invitationsConfigured', 'Invitations set up') + ' <span class="muted">off: creating and claiming UMA invitations answers 400 INVITATIONS_NOT_CONFIGURED</span></p>' +
    '<p><button type="submit" id="save-sandbox">Save sandbox options</button></p></form>';
}
/** Name each row's inputs after its position: "<list>.<i>.<key>"; removed rows are skipped. */
function renumber(form) {
  const counters = {};
  for (const tr of form.querySelectorAll('tr[data-list]')) {
    const list = tr.dataset.list;
    const i = counters[list] = (counters[list] ?? -1) + 1;
    tr.dataset.field = list + '.' + i;
    for (const el of tr.querySelectorAll('[data-k]')) el.dataset.field = list + '.' + i + '.' + el.dataset.k;
  }
}
/** An integer typed as digits is sent as a number; anything else as typed, for the API to name. */
const num = (v) => /^-?\d+$/.test(v) ? Number(v) : v;
function collectConfig(form) {
  renumber(form);
  const val = (f) => { const el = form.querySelector('[data-field="' + f + '"]'); return el ? el.value.trim() : ''; };
  const endpoint = val('webhookEndpoint');
  const body = { umaDomain: val('umaDomain'), webhookEndpoint: endpoint === '' ? null : endpoint };
  body.supportedCurrencies = [...form.querySelectorAll('tr[data-list=supportedCurrencies]')].map((tr) => {
    const f = tr.dataset.field;
    return { currencyCode: val(f + '.currencyCode'), minAmount: num(val(f + '.minAmount')), maxAmount: num(val(f + '.maxAmount')),
      requiredCounterpartyFields: fieldsOf(val(f + '.requiredCounterpartyFields')), enabledTransactionTypes: [...tr.querySelectorAll('input[data-type]:checked')].map((x) => x.dataset.type) };
  });
  body.feeConfigs = [...form.querySelectorAll('tr[data-list=feeConfigs]')].map((tr) => {
    const f = tr.dataset.field;
    const off = tr.dataset.removed === '1';
    return { feeType: val(f + '.feeType'), sourceCurrency: val(f + '.sourceCurrency'), variableFeeBps: off ? 0 : num(val(f + '.variableFeeBps')), fixedFee: { amount: off ? 0 : num(val(f + '.fixedFee.amount')), currency: val(f + '.fixedFee.currency') } };
  });
  const nested = (prefix, fields, numeric) => {
    const out = {};
    for (const [k] of fields) {
      const v = val(prefix + '.' + k);
      if (v === '') continue;
      const parts = k.split('.');
      let o = out;
      for (const p of parts.slice(0, -1)) o = o[p] = o[p] || {};
      o[parts[parts.length - 1]] = numeric.includes(k) ? num(v) : v;
    }
    return out;
  };
  const wallet = nested('embeddedWalletConfig', WALLET, ['otpLength', 'expirationSeconds']);
  const alnum = val('embeddedWalletConfig.alphanumeric');
  if (alnum) wallet.alphanumeric = alnum === 'true';
  if (Object.keys(wallet).length) body.embeddedWalletConfig = wallet;
  const twoFa = nested('cardTokenization2faConfig', TWO_FA, []);
  if (Object.keys(twoFa).length) body.cardTokenization2faConfig = twoFa;
  return body;
}
/** Each field error beside its field (or the nearest enclosing one); the rest in the form's error line. */
function showErrors(form, line, err) {
  form.querySelectorAll('.ferr').forEach((x) => x.remove());
  const errors = (err.body && err.body.details && err.body.details.errors) || [];
  const loose = [];
  for (const e of errors) {
    let path = String(e.field || '');
    let el = null;
    while (path && !(el = form.querySelector('[data-field="' + path + '"]'))) path = path.includes('.') ? path.slice(0, path.lastIndexOf('.')) : '';
    const span = '<span class="ferr err" data-error-for="' + esc(e.field) + '">' + esc(e.message) + '</span>';
    if (!el) loose.push(e);
    else if (el.tagName === 'TR') el.lastElementChild.insertAdjacentHTML('beforeend', span);
    else el.insertAdjacentHTML('afterend', span);
  }
  const other = err.body && err.body.details && err.body.details.field ? ' (' + err.body.details.field + ')' : '';
  $(line).textContent = errors.length ? loose.map((e) => e.field + ': ' + e.message).join('; ') : err.message + other;
}
async function saveForm(form, line, what, send) {
  form.querySelectorAll('.ferr').forEach((x) => x.remove());
  $(line).textContent = '';
  try { await send(); note(what + ' saved.'); await render(); }
  catch (e) { note(what + ' not saved: ' + e.message, true); showErrors(form, line, e); }
}
document.addEventListener('submit', (e) => {
  const form = e.target;
  if (form.id === 'config-form') { e.preventDefault(); saveForm(form, '#form-errors', 'Settings', () => api('PATCH', '/config', collectConfig(form))); }
  if (form.id === 'sandbox-form') {
    e.preventDefault();
    const body = {};
    for (const x of form.querySelectorAll('input[data-field]')) body[x.dataset.field] = x.checked;
    saveForm(form, '#sandbox-errors', 'Sandbox options', () => api('PATCH', '/sandbox/settings', body));
  }
});

// ---- The pages: [hash, title, render]; a page with a parameter is "<hash>/<id>" --------------

const PAGES = [
  ['overview', 'Overview', async () => {
    const [clock, customers, tx, accounts, deliveries, approvals, reqs] = await Promise.all([api('GET', '/sandbox/clock'), api('GET', '/customers?limit=1'), api('GET', '/transactions?limit=1'),
      api('GET', '/customers/internal-accounts?limit=1'), api('GET', '/sandbox/webhook-deliveries?limit=5'), maybe('/agents/approvals?limit=1'), api('GET', '/sandbox/requests?limit=10')]);
    return h2('Overview') + '<p>Sandbox clock: <b id="clock">' + esc(clock.now) + '</b> <span class="muted">(offset ' + esc(clock.offsetSeconds) + ' s)</span></p>' +
      '<div class="cards"><a href="#customers"><b>' + count(customers) + '</b> customers</a><a href="#accounts"><b>' + count(accounts) + '</b> customer accounts</a><a href="#transactions"><b>' + count(tx) + '</b> transactions</a>' +
      '<a href="#webhooks"><b>' + count(deliveries) + '</b> webhook deliveries</a><a href="#approvals"><b>' + count(approvals) + '</b> pending approvals</a></div>' +
      '<p class="actions">' + btn('advance', 'Advance the clock') + btn('testWebhook', 'Send the test webhook') + btn('receive', 'Simulate an incoming UMA payment') + btn('seed', 'Seed demo data') + btn('reset', 'Reset the platform') + '</p>' +
      '<div class="two"><div><h3>Recent requests</h3>' + table([['At', (r) => when(r.at)], ['Request', (r) => esc(r.method + ' ' + r.path)], ['Status', (r) => esc(r.status)]], reqs.data) + '</div>' +
      '<div><h3>Recent webhooks</h3>' + table([['Created', (d) => when(d.createdAt)], ['Type', (d) => esc(d.type)], ['Resource', (d) => link(d.resourceId)], ['Status', (d) => badge(d.status)]], deliveries.data) + '</div></div>';
  }],
  ['customers', 'Customers', async () => {
    const r = await api('GET', '/customers?limit=100');
    return h2('Customers') + table([['Customer', (c) => link(c.id)], ['Name', (c) => link(c.id, c.fullName || (c.businessInfo && c.businessInfo.legalName) || c.id)], ['Type', (c) => esc(c.customerType)], ['KYC/KYB', (c) => badge(c.kycStatus || c.kybStatus)],
      ['UMA address', (c) => esc(c.umaAddress)], ['Created', (c) => when(c.createdAt)]], r.data);
  }],
  ['customer', null, async (id) => {
    const c = await api('GET', '/customers/' + enc(id));
    const business = c.customerType === 'BUSINESS';
    const [verifications, documents, owners, accounts, external, tx, cards] = await Promise.all([maybe('/verifications?limit=100&customerId=' + enc(id)), maybe('/documents?limit=100&documentHolder=' + enc(id)),
      business ? maybe('/beneficial-owners?limit=100&customerId=' + enc(id)) : null, api('GET', '/customers/internal-accounts?limit=100&customerId=' + enc(id)),
      api('GET', '/customers/external-accounts?limit=100&customerId=' + enc(id)), api('GET', '/transactions?limit=100&customerId=' + enc(id)), maybe('/cards?limit=100&cardholderId=' + enc(id))]);
    const errors = (verifications ? verifications.data : []).flatMap((v) => v.errors.map((e) => ({ ...e, verificationId: v.id, verificationStatus: v.verificationStatus })));
    return h2(c.fullName || (c.businessInfo && c.businessInfo.legalName) || id) + '<p class="muted">' + esc(id) + '</p>' +
      '<p>' + esc(c.customerType) + ' · ' + (business ? 'KYB' : 'KYC') + ' ' + badge(c.kycStatus || c.kybStatus) + (c.umaAddress ? ' · ' + esc(c.umaAddress) : '') + ' · created ' + when(c.createdAt) + '</p>' +
      '<p class="actions">' + btn('receive', 'Simulate an incoming UMA payment', { customer: id }) + '</p>' +
      '<h3>Verifications</h3>' + table([['Verification', (v) => esc(short(v.id))], ['Status', (v) => badge(v.verificationStatus)], ['Errors', (v) => esc(v.errors.length)], ['Updated', (v) => when(v.updatedAt)]], verifications ? verifications.data : [], 'Not submitted for verification.') +
      (errors.length ? '<h3>Verification errors</h3>' + table([['Type', (e) => esc(e.type)], ['About', (e) => link(e.resourceId)], ['Field', (e) => esc(e.field)], ['Reason', (e) => esc(e.reason)], ['Accepted documents', (e) => esc((e.acceptedDocumentTypes || []).join(', '))]], errors) : '') +
      '<h3>Documents</h3>' + table([['Document', (d) => esc(short(d.id))], ['Type', (d) => esc(d.documentType)], ['Side', (d) => esc(d.side)], ['Country', (d) => esc(d.country)], ['File', (d) => esc(d.fileName)], ['Uploaded', (d) => when(d.createdAt)]], documents ? documents.data : [], 'No documents.') +
      (business ? '<h3>Beneficial owners</h3>' + table([['Owner', (o) => esc(short(o.id))], ['Name', (o) => esc(o.personalInfo ? [o.personalInfo.firstName, o.personalInfo.lastName].join(' ') : '')], ['Roles', (o) => esc((o.roles || []).join(', '))], ['Ownership %', (o) => esc(o.ownershipPercentage)], ['KYC', (o) => badge(o.kycStatus)]], owners ? owners.data : [], 'No beneficial owners.') : '') +
      '<h3>Internal accounts</h3>' + table(accountCols, accounts.data, 'No internal accounts (the end-user terms are not on file, or no currencies).') +
      '<h3>External accounts</h3>' + table(externalCols, external.data) +
      '<h3>Transactions</h3>' + table(txCols, tx.data) +
      '<h3>Cards</h3>' + table(cardCols, cards ? cards.data : []) + json(c);
  }],
  ['accounts', 'Internal accounts', async () => h2('Internal accounts') + table(accountCols, await allInternalAccounts())],
  ['account', null, async (id) => {
    const [accounts, entries, tx] = await Promise.all([allInternalAccounts(), api('GET', '/sandbox/internal-accounts/' + enc(id) + '/ledger-entries?limit=100'), api('GET', '/transactions?limit=100&accountIdentifier=' + enc(id))]);
    const a = accounts.find((x) => x.id === id);
    return h2('Internal account') + '<p class="muted">' + esc(id) + '</p>' + (a ? table(accountCols, [a]) : '') +
      '<h3>Ledger entries</h3>' + table([['At', (e) => when(e.createdAt)], ['Kind', (e) => esc(e.kind)], ['Lines on this account', (e) => e.postings.map((p) => esc(p.bucket) + ' ' + esc(p.amount > 0 ? '+' + p.amount : p.amount)).join('<br>')],
        ['Available', (e) => esc(e.availableChange)], ['Total', (e) => esc(e.totalChange)], ['Caused by', (e) => link(e.referenceId)], ['Memo', (e) => esc(e.memo)]], entries.data, 'No ledger entries: nothing moved this account yet.') +
      '<h3>Transactions</h3>' + table(txCols, tx.data);
  }],
  ['external', 'External accounts', async () => h2('External accounts') + table(externalCols, (await api('GET', '/customers/external-accounts?limit=100')).data)],
  ['quotes', 'Quotes', async () => {
    const r = await api('GET', '/quotes?limit=100');
    return h2('Quotes') + table([['Quote', (q) => link(q.id)], ['Status', (q) => badge(q.status)], ['Sends', (q) => esc(fmt(q.totalSendingAmount, q.sendingCurrency.decimals)) + ' ' + esc(q.sendingCurrency.code)],
      ['Receives', (q) => esc(fmt(q.totalReceivingAmount, q.receivingCurrency.decimals)) + ' ' + esc(q.receivingCurrency.code)], ['From', (q) => endpointOf(q.source)], ['To', (q) => endpointOf(q.destination)], ['Transaction', (q) => link(q.transactionId)], ['Expires', (q) => when(q.expiresAt)]], r.data);
  }],
  ['quote', null, async (id) => {
    const q = await api('GET', '/quotes/' + enc(id));
    const tx = q.transactionId ? await maybe('/transactions/' + enc(q.transactionId)) : null;
    const points = [[q.createdAt, 'CREATED', 'quote'], [q.expiresAt, 'EXPIRES', 'the locked rate stops being executable'], ...(tx ? [[tx.createdAt, 'TRANSACTION ' + tx.id.slice(0, 20) + '…', 'created ' + tx.type], [tx.settledAt, 'SETTLED', ''], [tx.updatedAt, tx.status, 'transaction status now']] : [])];
    return h2('Quote ' + q.status) + '<p class="muted">' + esc(id) + '</p>' +
      '<p>From ' + endpointOf(q.source) + ' to ' + endpointOf(q.destination) + ' · sends ' + esc(fmt(q.totalSendingAmount, q.sendingCurrency.decimals)) + ' ' + esc(q.sendingCurrency.code) + ', receives ' + esc(fmt(q.totalReceivingAmount, q.receivingCurrency.decimals)) + ' ' + esc(q.receivingCurrency.code) +
      ' · transaction ' + link(q.transactionId) + '</p><h3>Timeline</h3>' + await timeline(points, [q.id, q.transactionId]) + json(q);
  }],
  ['transactions', 'Transactions', async () => h2('Transactions', '<p class="actions">' + btn('receive', 'Simulate an incoming UMA payment') + '</p>') + table(txCols, (await api('GET', '/transactions?limit=100')).data)],
  ['transaction', null, async (id) => {
    const t = await api('GET', '/transactions/' + enc(id));
    const points = [[t.createdAt, 'CREATED', t.type + ' ' + (t.description || '')], [t.refund && t.refund.initiatedAt, 'REFUND ' + (t.refund && t.refund.status), t.refund && t.refund.reason], [t.refund && t.refund.settledAt, 'REFUND SETTLED', ''],
      [t.settledAt, 'SETTLED', ''], [t.updatedAt, t.status, (t.failureReason ? t.failureReason + ' · ' : '') + 'status now']];
    return h2('Transaction ' + t.status) + '<p class="muted">' + esc(id) + '</p>' +
      '<p>' + esc(t.type) + ' · ' + badge(t.status) + ' · customer ' + link(t.customerId) + ' · from ' + endpointOf(t.source) + ' to ' + endpointOf(t.destination) + (t.quoteId ? ' · quote ' + link(t.quoteId) : '') + (t.agentId ? ' · agent ' + link(t.agentId) : '') + '</p>' +
      '<p>Sent ' + money(t.sentAmount) + ' · received ' + money(t.receivedAmount) + (t.fees ? ' · fees ' + esc(t.fees) : '') + '</p>' +
      (t.status === 'PENDING' ? '<p class="actions">' + btn('approve', 'Approve', { id: t.id }) + btn('reject', 'Reject', { id: t.id }) + '</p>' : '') +
      '<h3>Timeline</h3>' + await timeline(points, [t.id, t.quoteId]) + json(t);
  }],
  ['cards', 'Cards', async () => h2('Cards') + table(cardCols, (await api('GET', '/cards?limit=100')).data)],
  ['agents', 'Agents', async () => {
    const r = await api('GET', '/agents?limit=100');
    return h2('Agents') + table([['Agent', (a) => esc(short(a.id))], ['Name', (a) => esc(a.name)], ['Customer', (a) => link(a.customerId)], ['Paused', (a) => a.isPaused ? 'yes' : 'no'], ['Connected', (a) => a.isConnected ? 'yes' : 'no'],
      ['Mode', (a) => esc(a.policy && a.policy.defaultExecutionMode)], ['Usage', (a) => esc(a.usage ? a.usage.dailyTransactionCount + ' today, ' + a.usage.dailySpend + ' spent today' : '')], ['Created', (a) => when(a.createdAt)]], r.data);
  }],
  ['approvals', 'Approvals', async () => {
    const r = await api('GET', '/agents/approvals?limit=100');
    return h2('Agent actions pending approval') + table([['Action', (x) => esc(short(x.id))], ['Agent', (x) => esc(short(x.agentId))], ['Customer', (x) => link(x.customerId)], ['Type', (x) => esc(x.type)], ['Amount', actionAmount],
      ['Why', (x) => esc(x.policyDecision && x.policyDecision.reasons.join(', '))], ['Expires', (x) => when(x.expiresAt)], ['', (x) => btn('approveAction', 'Approve', { id: x.id, agent: x.agentId }) + btn('rejectAction', 'Reject', { id: x.id, agent: x.agentId })]], r.data, 'No action is waiting for approval.');
  }],
  ['webhooks', 'Webhook deliveries', async () => {
    const r = await api('GET', '/sandbox/webhook-deliveries?limit=100');
    return h2('Webhook deliveries') + table([['Created', (d) => when(d.createdAt)], ['Type', (d) => esc(d.type)], ['Resource', (d) => link(d.resourceId)], ['Status', (d) => badge(d.status)],
      ['Attempts', (d) => d.attemptLog.length ? '<table class="attempts">' + d.attemptLog.map((a) => '<tr><td>#' + esc(a.attempt) + '</td><td>' + when(a.startedAt) + '</td><td>' + esc(a.statusCode ?? a.error) + '</td><td>' + esc(a.latencyMs) + ' ms</td><td>' + excerpt(a.responseBody) + '</td></tr>').join('') + '</table>' : '<span class="muted">none</span>'],
      ['', (d) => btn('redeliver', 'Redeliver', { id: d.id })]], r.data);
  }],
  ['requests', 'Request log', async () => {
    const r = await api('GET', '/sandbox/requests' + (showDashboardReads ? '?includeDashboardReads=true' : ''));
    return h2('Request log') + '<p class="muted">The platform\'s calls' + (showDashboardReads ? ' and the dashboard\'s own reads' : '; the dashboard\'s own reads are hidden') + '. ' +
      btn('toggleDashboardReads', showDashboardReads ? 'Hide the dashboard\'s reads' : 'Show the dashboard\'s reads') + '</p>' +
      table([['At', (e) => when(e.at)], ['Request', (e) => esc(e.method + ' ' + e.path) + (e.source === 'dashboard' ? ' <span class="st">dashboard</span>' : '')], ['Status', (e) => esc(e.status) + (e.fault ? ' <span class="st st-failed fault" title="' + esc(e.fault.ruleId) + '">fault: ' + esc(e.fault.kind) + '</span>' : '')], ['ms', (e) => esc(e.latencyMs)], ['Idempotency-Key', (e) => esc(e.idempotencyKey) + (e.replayed ? ' (replayed)' : '')],
      ['Bodies', (e) => (e.requestBody != null ? '<details><summary>request</summary><pre>' + esc(JSON.stringify(e.requestBody, null, 2)) + '</pre></details>' : '') + (e.responseBody != null ? '<details><summary>response</summary><pre>' + esc(JSON.stringify(e.responseBody, null, 2)) + '</pre></details>' : '')]], r.data);
  }],
  ['faults', 'Faults', async () => {
    const r = await api('GET', '/sandbox/faults');
    const lasts = (f) => f.count !== null ? esc(f.remaining) + ' of ' + esc(f.count) + ' calls left' : esc(Math.round((f.fraction ?? 1) * 100)) + ' % of calls until ' + when(f.expiresAt);
    return h2('Faults on demand') + '<p class="muted">Rules that make this platform\'s calls fail as the real service can (<code>/sandbox/faults</code>); faulted requests are marked in the request log. The dashboard\'s own requests are never faulted.</p>' +
      '<p class="actions">' + btn('addFault', 'Add a fault rule') + btn('clearFaults', 'Remove every rule') + '</p>' +
      table([['Rule', (f) => esc(short(f.id))], ['Kind', (f) => badge(f.kind)], ['Operation', (f) => esc(f.operation ?? 'webhook deliveries')], ['Lasts', lasts],
        ['Options', (f) => esc([f.delayMs !== null ? 'delay ' + f.delayMs + ' ms' : '', f.retryAfterSeconds !== null ? 'Retry-After ' + f.retryAfterSeconds + ' s' : ''].filter(Boolean).join(', '))], ['Created', (f) => when(f.createdAt)],
        ['', (f) => btn('removeFault', 'Remove', { id: f.id })]], r.data, 'No fault rule: every call is answered normally.');
  }],
  ['settings', 'Settings', async () => {
    const [cfg, sandbox] = await Promise.all([api('GET', '/config'), api('GET', '/sandbox/settings')]);
    return h2('Settings') + settingsForm(cfg) + sandboxForm(sandbox);
  }],
];

// The operator's pages (signed in with PAYMENTS_ADMIN_KEY).
const OPERATOR_PAGES = [
  ['platforms', 'Platforms', async () => {
    const r = await admin('GET', '/platforms');
    return h2('All platforms') + '<p class="actions">' + btn('resetAll', 'Reset every platform') + '</p>' +
      table([['Platform', (p) => esc(p.id)], ['Name', (p) => esc(p.name) + (p.isDefault ? ' <span class="muted">(default)</span>' : '')], ['Regulated', (p) => p.regulated ? 'yes' : 'no'], ['Clock offset', (p) => esc(Math.round(p.sandboxClockOffsetMs / 1000)) + ' s'],
        ['Created', (p) => when(p.createdAt)], ['', (p) => btn('resetPlatform', 'Reset', { id: p.id })]], r.data);
  }],
];

async function search(id) {
  id = id.trim();
  if (ROUTES[id.split(':')[0]] && !['agents', 'cards'].includes(ROUTES[id.split(':')[0]])) { location.hash = '#' + ROUTES[id.split(':')[0]] + '/' + enc(id); return null; }
  for (const p of ['/customers/', '/transactions/', '/quotes/', '/cards/', '/agents/', '/customers/external-accounts/']) {
    try { return h2(id) + '<pre>' + esc(JSON.stringify(await api('GET', p + enc(id)), null, 2)) + '</pre>'; } catch {}
  }
  return '<p class="err">Nothing found for ' + esc(id) + '</p>';
}

function signin() {
  if ($('#signin')) return; // already shown: keep what is typed and any error line
  $('#nav').innerHTML = '';
  $('#who').textContent = '';
  $('#note').textContent = '';
  $('#search').hidden = true;
  $('#search').reset();
  $('#main').innerHTML = '<div class="signin"><form id="signin"><h2>Sign in with an API token</h2><label>Client id (API token id)<input name="id" required></label><label>Client secret<input name="secret" type="password" required></label><button>Sign in</button><p class="err" id="err"></p></form>' +
    '<form id="signin-operator"><h2>Operator</h2><label>Operator key (PAYMENTS_ADMIN_KEY)<input name="key" type="password" required></label><button>Sign in as operator</button><p class="err" id="err-operator"></p></form></div>';
  $('#signin').onsubmit = async (e) => {
    e.preventDefault();
    const f = new FormData(e.target);
    const candidate = 'Basic ' + btoa(f.get('id') + ':' + f.get('secret'));
    // Checked before it is kept: the live-update timer renders whatever is signed in, and would
    // replace this form (and its error line) if an unchecked pair were already stored.
    try { await call(V + '/sandbox/clock', candidate, 'GET'); } catch (err) { $('#err').textContent = err.message; return; }
    sessionStorage.setItem('auth', candidate); location.hash = '#overview'; render();
  };
  $('#signin-operator').onsubmit = async (e) => {
    e.preventDefault();
    const candidate = 'Bearer ' + new FormData(e.target).get('key');
    try { await call('/admin/platforms', candidate, 'GET'); } catch (err) { $('#err-operator').textContent = err.message; return; }
    sessionStorage.setItem('admin', candidate); location.hash = '#platforms'; render();
  };
}

let busy = false;
async function render() {
  if (!auth() && !operator()) return signin();
  const pages = auth() ? PAGES : OPERATOR_PAGES;
  const hash = decodeURIComponent(location.hash.slice(1)) || pages[0][0];
  const [name, ...rest] = hash.split('/');
  const param = rest.join('/');
  $('#nav').innerHTML = pages.filter((p) => p[1]).map((p) => '<a href="#' + p[0] + '"' + (name === p[0] ? ' class="on"' : '') + '>' + esc(p[1]) + '</a>').join('') + '<a href="#" id="signout">Sign out</a>';
  $('#who').textContent = auth() ? 'platform' : 'operator: all platforms';
  $('#search').hidden = !auth(); // search reads the platform's API
  $('#signout').onclick = (e) => { e.preventDefault(); sessionStorage.removeItem('auth'); sessionStorage.removeItem('admin'); location.hash = ''; signin(); };
  busy = true;
  const who = auth() + ' ' + operator();
  // A page that was being read when its user signed out (or in as someone else) is dropped.
  const current = () => who === auth() + ' ' + operator();
  try {
    const page = pages.find((p) => p[0] === name) || pages[0];
    const html = name === 'search' && auth() ? await search(param) : await page[2](param);
    if (html !== null && current()) {
      $('#main').innerHTML = html;
      $('#main').dataset.page = name;
      if ($('#config-form')) renumber($('#config-form')); // the rows' fields get their API paths
    }
  } catch (e) { if (current()) $('#main').innerHTML = '<p class="err">' + esc(e.message) + '</p>'; }
  busy = false;
}
$('#search').onsubmit = (e) => { e.preventDefault(); location.hash = '#search/' + enc(new FormData(e.target).get('q')); };
window.onhashchange = render;
// Live updates: the open page is read again every 3 seconds (not while typing or in the dialog,
// nor while a JSON block is open, nor a page of STILL: the settings form).
setInterval(() => { if ((auth() || operator()) && !busy && !STILL.includes($('#main').dataset.page) && !document.querySelector('input:focus, dialog[open], details[open]')) render(); }, 3000);
render();
`;
