import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { API_VERSION } from '../config.js';
import { DASHBOARD_SCRIPT } from './script.js';

// The dashboard at /dashboard: one HTML shell served by the server itself (no CDN, no
// framework) and one small script that signs in with the platform's API token pair, or with
// the operator key for the operator view (kept in the tab's sessionStorage only), and reads
// the platform's own API (or /admin). A page is one entry of PAGES (OPERATOR_PAGES) in
// script.ts: a later area adds its page there. The dialog asks the fields of an action.

const STYLE = `
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:6px 16px;display:flex;gap:12px;align-items:center;flex-wrap:wrap;position:sticky;top:0;z-index:1}
header nav{display:flex;flex-wrap:wrap;gap:2px 12px}header a{color:#cfe0ff;text-decoration:none}header a.on{color:#fff;font-weight:600;border-bottom:2px solid #7fb0ff}
header input{padding:3px 6px}#who{font-size:12px}
#note{padding:4px 16px;min-height:1.6em;font-size:13px}#note.ok{color:#0a6b2f}
main{padding:0 16px 16px;max-width:1400px}h2{margin:8px 0}h3{margin:16px 0 6px}
table{border-collapse:collapse;width:100%;background:#fff;font-size:13px}td,th{border-bottom:1px solid #e3e6ea;padding:4px 6px;text-align:left;vertical-align:top}th{background:#eef1f5;font-weight:600}
table.attempts{background:transparent;font-size:12px}table.attempts td{border:0;padding:0 6px 0 0}
a{color:#1d4fd8}pre{white-space:pre-wrap;word-break:break-all;max-height:320px;overflow:auto;background:#f0f2f5;margin:0;padding:4px;font-size:12px}code{font-size:12px;background:#f0f2f5}
details summary{cursor:pointer;color:#445;font-size:12px}
button{margin:2px 4px 2px 0;padding:3px 8px;cursor:pointer}.actions button{padding:5px 10px}
.err{color:#b00020}.muted{color:#667}
.st{padding:1px 6px;border-radius:8px;background:#e8ebf0;font-size:12px;white-space:nowrap}
.st-completed,.st-approved,.st-delivered,.st-active{background:#d8f3e0;color:#0a5a27}.st-failed,.st-rejected,.st-closed{background:#fbe0e3;color:#8a1020}
.st-pending,.st-processing,.st-pending_review,.st-sending,.st-pending_approval{background:#fff1cc;color:#6b4b00}
.cards{display:flex;gap:8px;flex-wrap:wrap;margin:8px 0}.cards a{background:#fff;border:1px solid #e3e6ea;padding:8px 12px;color:#1d2330;text-decoration:none;min-width:140px}.cards b{font-size:20px;display:block}
.two{display:grid;grid-template-columns:1fr 1fr;gap:16px}@media (max-width:1000px){.two{grid-template-columns:1fr}}
ol.timeline{background:#fff;padding:8px 8px 8px 32px;margin:0}ol.timeline li{margin:2px 0}
.signin{display:flex;gap:16px;flex-wrap:wrap;margin-top:16px}.signin form{background:#fff;padding:16px;width:380px}.signin input{display:block;width:100%;margin:4px 0 8px}
dialog{border:1px solid #99a;padding:16px;min-width:380px}dialog label{display:block;margin:6px 0}dialog input{display:block;width:100%}
form.settings{background:#fff;padding:8px 16px;margin:8px 0}form.settings label{display:block;margin:4px 0}form.settings label.inline{display:inline;margin-right:8px}form.settings input:not([type=checkbox]){margin-left:8px}
form.settings fieldset{border:0;padding:0;margin:0}form.settings label>input,form.settings label>select{margin-left:8px}.ferr{display:block;font-size:12px}td .ferr{max-width:320px}
`;

export const DASHBOARD_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Payments Service sandbox dashboard</title><style>${STYLE}</style></head>
<body><header><strong>Payments Service sandbox</strong><nav id="nav"></nav>
<form id="search"><input name="q" placeholder="Search by id" size="28"></form><span id="who" class="muted"></span></header>
<div id="note" role="status"></div><dialog id="ask"></dialog>
<main id="main"><noscript>The dashboard needs JavaScript (one small script served by this server).</noscript></main>
<script src="/dashboard/app.js"></script></body></html>`;

/** What `GET /` links, in its order: [path, label, what it is]. */
export const HOME_LINKS: ReadonlyArray<readonly [string, string, string]> = [
  ['/dashboard', 'Dashboard', 'sign in with an API token pair (or the operator key): data, sandbox actions, webhook and request logs, settings'],
  ['/docs', 'API documentation', 'the OpenAPI document in Swagger UI'],
  [`/${API_VERSION}/openapi.json`, 'OpenAPI document', `JSON, API version ${API_VERSION} (the base URL of the API is /${API_VERSION})`],
  ['/healthz', 'Health check', 'liveness: 200 while the process runs'],
  ['/readyz', 'Readiness', 'the store answers, migrations applied, a platform exists'],
  ['/metrics', 'Metrics', 'Prometheus text'],
];

/** The page `GET /` answers (no external assets). */
export const HOME_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Payments Service sandbox</title><style>body{font:15px/1.5 system-ui,sans-serif;margin:32px;color:#1d2330}a{color:#1d4fd8}li{margin:4px 0}.muted{color:#667}</style></head>
<body><h1>Payments Service sandbox</h1><p class="muted">API version ${API_VERSION}: the API is served under <code>/${API_VERSION}</code>.</p>
<ul>${HOME_LINKS.map(([href, label, what]) => `<li><a href="${href}">${label}</a> <span class="muted">— ${what}</span></li>`).join('')}</ul></body></html>`;

/**
 * `GET /`: a browser gets the small page linking the dashboard, the API documentation and the
 * checks; a client that asks for JSON (Accept names application/json and not text/html) gets
 * the same links as JSON.
 */
function home(req: FastifyRequest, reply: FastifyReply) {
  const accept = req.headers.accept ?? '';
  if (/application\/json/i.test(accept) && !/text\/html/i.test(accept)) {
    return reply.header('cache-control', 'no-store').send({
      name: 'Payments Service sandbox',
      apiVersion: API_VERSION,
      apiBaseUrl: `/${API_VERSION}`,
      links: HOME_LINKS.map(([href, label]) => ({ href, title: label })),
    });
  }
  return reply.type('text/html; charset=utf-8').header('cache-control', 'no-store').send(HOME_HTML);
}

export const dashboardPages: FastifyPluginAsync = async (app) => {
  app.get('/', { schema: { hide: true } }, home);
  const html = (_req: unknown, reply: import('fastify').FastifyReply) => reply.type('text/html; charset=utf-8').header('cache-control', 'no-store').send(DASHBOARD_HTML);
  app.get('/dashboard', { schema: { hide: true } }, html);
  app.get('/dashboard/*', { schema: { hide: true } }, (req, reply) =>
    req.url.split('?')[0] === '/dashboard/app.js' ? reply.type('text/javascript; charset=utf-8').send(DASHBOARD_SCRIPT) : html(req, reply),
  );
};
