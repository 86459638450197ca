import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { ApiError } from '../../kernel/errors.js';
import { accountInfoOf, completeLiveness, livenessState, type LivenessState } from './service.js';

// The sandbox's hosted liveness check of a LIVENESS ownership challenge, outside the
// versioned API: no authentication (the token in the URL is the credential),
// server-rendered HTML, no scripts, no external assets. The page has two buttons: "pass"
// makes the wallet ACTIVE, "fail" makes it UNVERIFIED, each with its
// EXTERNAL_ACCOUNT.STATUS_UPDATED event. The link works once.

const HEADERS = {
  'cache-control': 'no-store',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
};

const TokenParams = Type.Object({ token: Type.String({ minLength: 1, maxLength: 128 }) });

function esc(s: unknown): string {
  return String(s ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

const STYLE = `
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:#f4f5f7;color:#1d2330;margin:0;padding:2rem 1rem}
main{max-width:34rem;margin:0 auto;background:#fff;border-radius:12px;box-shadow:0 1px 4px rgba(0,0,0,.08);padding:2rem}
h1{font-size:1.4rem;margin:0 0 .5rem}p.sub{color:#5b6474}code{background:#eef1f6;border-radius:4px;padding:.1rem .3rem;word-break:break-all}
.buttons{display:grid;grid-template-columns:1fr 1fr;gap:1rem;margin-top:1.5rem}
button{padding:.75rem;border:0;border-radius:8px;color:#fff;font-size:1rem;font-weight:600;cursor:pointer}
button.pass{background:#1f8a4c}button.fail{background:#c62f2f}
.ok{background:#e9f7ef;border:1px solid #9fd8b5;border-radius:8px;padding:.75rem 1rem}
.error{background:#fdecec;border:1px solid #f0a8a8;border-radius:8px;padding:.75rem 1rem}
footer{max-width:34rem;margin:1rem auto;color:#8a91a0;font-size:.8rem;text-align:center}
`;

function layout(title: string, body: string): string {
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">` +
    `<meta name="robots" content="noindex"><title>${esc(title)}</title><style>${STYLE}</style></head>` +
    `<body><main>${body}</main><footer>Wallet ownership verification · sandbox liveness check (emulated)</footer></body></html>`
  );
}

function closed(state: Exclude<LivenessState, { kind: 'open' }>): { status: number; html: string } {
  if (state.kind === 'expired') {
    return {
      status: 410,
      html: layout('Link expired', `<h1>This verification link has expired</h1><p class="sub">It was open until ${esc(state.expiresAt)}. Ask for a new link.</p>`),
    };
  }
  return {
    status: 404,
    html: layout('Link not found', `<h1>This verification link is not valid</h1><p class="sub">It does not exist, was already used, or was replaced by a newer challenge.</p>`),
  };
}

function formPage(state: Extract<LivenessState, { kind: 'open' }>): string {
  const info = accountInfoOf(state.row);
  return layout(
    'Verify wallet ownership',
    `<h1>Verify that this wallet is yours</h1>` +
      `<p class="sub">A liveness check confirms that the person who controls the wallet is the account holder.</p>` +
      `<p>Wallet (${esc(info.accountType)}): <code>${esc(info.address)}</code></p>` +
      `<p>This link is open until ${esc(state.expiresAt)}.</p>` +
      `<p class="sub">Sandbox: no camera is used. Choose the outcome of the check.</p>` +
      `<form method="post"><div class="buttons">` +
      `<button class="pass" type="submit" name="outcome" value="pass">pass</button>` +
      `<button class="fail" type="submit" name="outcome" value="fail">fail</button>` +
      `</div></form>`,
  );
}

export const ownershipVerificationPages: FastifyPluginAsync = async (app) => {
  const { store, clock } = app.deps;
  const deps = { store, clock };

  // The form posts application/x-www-form-urlencoded; only this plugin parses it.
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(String(body))));
  });

  const html = (reply: FastifyReply, status: number, body: string) => reply.code(status).headers(HEADERS).type('text/html; charset=utf-8').send(body);

  app.setErrorHandler((err: Error & { statusCode?: number }, req, reply) => {
    const raw = err instanceof ApiError ? err.status : (err.statusCode ?? 500);
    const status = raw >= 400 && raw < 600 ? raw : 500;
    if (status >= 500) req.log.error({ err }, 'hosted ownership page failed');
    return html(reply, status, layout('Error', `<h1>Something went wrong</h1><p class="error">${esc(status >= 500 ? 'Please try again later.' : err.message)}</p>`));
  });

  app.get<{ Params: { token: string } }>('/hosted/ownership/:token', { schema: { hide: true, params: TokenParams } }, async (req, reply) => {
    const state = await livenessState(deps, req.params.token);
    if (state.kind !== 'open') {
      const page = closed(state);
      return html(reply, page.status, page.html);
    }
    return html(reply, 200, formPage(state));
  });

  app.post<{ Params: { token: string }; Body: { outcome?: string } | undefined }>(
    '/hosted/ownership/:token',
    { schema: { hide: true, params: TokenParams } },
    async (req, reply) => {
      const outcome = req.body?.outcome;
      if (outcome !== 'pass' && outcome !== 'fail') {
        const state = await livenessState(deps, req.params.token);
        if (state.kind !== 'open') {
          const page = closed(state);
          return html(reply, page.status, page.html);
        }
        return html(reply, 400, formPage(state).replace('<form', '<p class="error">Choose pass or fail.</p><form'));
      }
      const { state, account } = await completeLiveness(deps, req.params.token, outcome);
      if (state.kind !== 'open' || !account) {
        const page = closed(state.kind === 'open' ? { kind: 'unknown' } : state);
        return html(reply, page.status, page.html);
      }
      const passed = account.status === 'ACTIVE';
      return html(
        reply,
        200,
        layout(
          passed ? 'Verification passed' : 'Verification failed',
          passed
            ? `<h1>Verification passed</h1><p class="ok">The wallet is verified and now <strong>ACTIVE</strong>. You can close this page.</p>`
            : `<h1>Verification failed</h1><p class="error">The wallet is now <strong>UNVERIFIED</strong>. Ask for a new verification link to try again.</p>`,
        ),
      );
    },
  );
};
