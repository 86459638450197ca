import type { FastifyPluginAsync } from 'fastify';
import { DASHBOARD_SCRIPT } from './script.js';

// The dashboard at /dashboard: one HTML shell served by the server itself (no CDN, no
// framework) and one small script that signs in with the platform's API token pair (kept in
// the tab's sessionStorage only) and reads the platform's own API. A page is one entry of
// PAGES in script.ts: a later area adds its page there.

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:8px 16px;display:flex;gap:16px;align-items:center;flex-wrap:wrap}
header a{color:#cfe0ff;text-decoration:none}header a.on{color:#fff;font-weight:600}
main{padding:16px;max-width:1280px}
table{border-collapse:collapse;width:100%;background:#fff}td,th{border-bottom:1px solid #e3e6ea;padding:4px 8px;text-align:left;vertical-align:top}
pre{white-space:pre-wrap;word-break:break-all;max-height:240px;overflow:auto;background:#f0f2f5;margin:0;padding:4px}
button{margin:2px 4px 2px 0}.err{color:#b00020}.muted{color:#667}
form.signin{background:#fff;padding:16px;max-width:420px}form.signin input{display:block;width:100%;margin:4px 0 8px}
`;

export const DASHBOARD_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Payments Service sandbox dashboard</title><style>${STYLE}</style></head>
<body><header><strong>Payments Service sandbox</strong><nav id="nav"></nav>
<form id="search"><input name="q" placeholder="Search by id" size="28"></form><span id="who" class="muted"></span></header>
<main id="main"><noscript>The dashboard needs JavaScript (one small script served by this server).</noscript></main>
<script src="/dashboard/app.js"></script></body></html>`;

export const dashboardPages: FastifyPluginAsync = async (app) => {
  const html = (_req: unknown, reply: import('fastify').FastifyReply) => reply.type('text/html; charset=utf-8').header('cache-control', 'no-store').send(DASHBOARD_HTML);
  app.get('/dashboard', { schema: { hide: true } }, html);
  app.get('/dashboard/*', { schema: { hide: true } }, (req, reply) =>
    req.url.split('?')[0] === '/dashboard/app.js' ? reply.type('text/javascript; charset=utf-8').send(DASHBOARD_SCRIPT) : html(req, reply),
  );
};
