// The dashboard's one script (served at /dashboard/app.js). Plain browser JavaScript.
export const DASHBOARD_SCRIPT = String.raw`
const V = '/2025-10-13';
const $ = (s) => document.querySelector(s);
const esc = (v) => String(v ?? '').replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
const auth = () => sessionStorage.getItem('auth');
async function api(method, path, body) {
  const res = await fetch(V + path, { method, headers: { authorization: auth(), ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined });
  const json = res.status === 204 ? null : await res.json();
  if (!res.ok) throw new Error(res.status + ' ' + (json && json.code) + ': ' + (json && json.message));
  return json;
}
const link = (id) => id ? '<a href="#search/' + encodeURIComponent(id) + '">' + esc(id) + '</a>' : '';
const money = (a) => a ? esc(a.amount) + ' ' + esc(a.currency && a.currency.code) : '';
const table = (cols, rows) => '<table><tr>' + cols.map((c) => '<th>' + esc(c[0]) + '</th>').join('') + '</tr>' + rows.map((r) => '<tr>' + cols.map((c) => '<td>' + c[1](r) + '</td>').join('') + '</tr>').join('') + '</table>' + (rows.length ? '' : '<p class="muted">Nothing yet.</p>');
const json = (v) => '<pre>' + esc(JSON.stringify(v, null, 2)) + '</pre>';
async function act(fn) { try { await fn(); await render(); } catch (e) { alert(e.message); } }
window.act = act; window.api = api;

// The pages: a later area adds one entry here.
const PAGES = [
  ['overview', 'Overview', async () => {
    const [clock, customers, tx, reqs] = await Promise.all([api('GET', '/sandbox/clock'), api('GET', '/customers?limit=100'), api('GET', '/transactions?limit=100'), api('GET', '/sandbox/requests?limit=10')]);
    return '<h2>Overview</h2><p>Sandbox clock: <b id="clock">' + esc(clock.now) + '</b> (offset ' + esc(clock.offsetSeconds) + ' s)</p>' +
      '<p>Customers: <b>' + customers.data.length + '</b> · Transactions: <b>' + tx.data.length + '</b></p>' +
      '<p><button id="advance" onclick="act(() => api(\'POST\', \'/sandbox/clock/advance\', { seconds: Number(prompt(\'Seconds\', \'60\')) }))">Advance the clock</button>' +
      '<button id="test-webhook" onclick="act(() => api(\'POST\', \'/sandbox/webhooks/test\'))">Send the test webhook</button>' +
      '<button id="reset" onclick="confirm(\'Reset this platform?\') && act(() => api(\'POST\', \'/sandbox/reset\'))">Reset the platform</button></p>' +
      '<h3>Recent activity</h3>' + table([['Method', (r) => esc(r.method)], ['Path', (r) => esc(r.path)], ['Status', (r) => esc(r.status)]], reqs.data);
  }],
  ['customers', 'Customers', async () => {
    const r = await api('GET', '/customers?limit=100');
    return '<h2>Customers</h2>' + table([['Id', (c) => link(c.id)], ['Type', (c) => esc(c.customerType)], ['Name', (c) => esc(c.fullName || (c.businessInfo && c.businessInfo.legalName))], ['KYC/KYB', (c) => esc(c.kycStatus || c.kybStatus)], ['Created', (c) => esc(c.createdAt)]], r.data);
  }],
  ['accounts', 'Internal accounts', async () => {
    const [c, p] = await Promise.all([api('GET', '/customers/internal-accounts?limit=100'), api('GET', '/platform/internal-accounts')]);
    return '<h2>Internal accounts</h2>' + table([['Id', (a) => link(a.id)], ['Customer', (a) => link(a.customerId) || 'platform'], ['Balance', (a) => money(a.balance)], ['Total', (a) => money(a.totalBalance)], ['Status', (a) => esc(a.status)],
      ['', (a) => '<button onclick="act(() => api(\'POST\', \'/sandbox/internal-accounts/' + encodeURIComponent(a.id) + '/fund\', { amount: Number(prompt(\'Amount (minor units)\', \'10000\')) }))">Fund</button>']], [...p.data, ...c.data]);
  }],
  ['external', 'External accounts', async () => {
    const r = await api('GET', '/customers/external-accounts?limit=100');
    return '<h2>External accounts</h2>' + table([['Id', (a) => link(a.id)], ['Customer', (a) => link(a.customerId)], ['Currency', (a) => esc(a.currency)], ['Status', (a) => esc(a.status)], ['Beneficiary', (a) => esc(JSON.stringify(a.accountInfo && a.accountInfo.beneficiary))]], r.data);
  }],
  ['transactions', 'Transactions', async () => {
    const r = await api('GET', '/transactions?limit=100');
    return '<h2>Transactions</h2>' + table([['Id', (t) => link(t.id)], ['Type', (t) => esc(t.type)], ['Status', (t) => esc(t.status)], ['Amount', (t) => money(t.sentAmount || t.receivedAmount)], ['Updated', (t) => esc(t.updatedAt)]], r.data);
  }],
  ['webhooks', 'Webhook deliveries', async () => {
    const r = await api('GET', '/sandbox/webhook-deliveries?limit=100');
    return '<h2>Webhook deliveries</h2>' + table([['Type', (d) => esc(d.type)], ['Resource', (d) => link(d.resourceId)], ['Status', (d) => esc(d.status)], ['Attempts', (d) => json(d.attemptLog)],
      ['', (d) => '<button onclick="act(() => api(\'POST\', \'/sandbox/webhook-deliveries/' + encodeURIComponent(d.id) + '/redeliver\'))">Redeliver</button>']], r.data);
  }],
  ['requests', 'Request log', async () => {
    const r = await api('GET', '/sandbox/requests');
    return '<h2>Request log</h2>' + table([['At', (e) => esc(e.at)], ['Request', (e) => esc(e.method + ' ' + e.path)], ['Status', (e) => esc(e.status)], ['ms', (e) => esc(e.latencyMs)], ['Idempotency-Key', (e) => esc(e.idempotencyKey) + (e.replayed ? ' (replayed)' : '')], ['Request body', (e) => json(e.requestBody)], ['Response body', (e) => json(e.responseBody)]], r.data);
  }],
];

async function search(id) {
  for (const p of ['/customers/', '/transactions/', '/quotes/', '/customers/internal-accounts/', '/customers/external-accounts/']) {
    try { return '<h2>' + esc(id) + '</h2>' + json(await api('GET', p + encodeURIComponent(id))); } catch {}
  }
  return '<p class="err">Nothing found for ' + esc(id) + '</p>';
}

function signin() {
  $('#main').innerHTML = '<form class="signin" id="signin"><h2>Sign in</h2><label>Client id (API token id)<input name="id" required></label><label>Client secret<input name="secret" type="password" required></label><button>Sign in</button><p class="err" id="err"></p></form>';
  $('#signin').onsubmit = async (e) => {
    e.preventDefault();
    const f = new FormData(e.target);
    sessionStorage.setItem('auth', 'Basic ' + btoa(f.get('id') + ':' + f.get('secret')));
    try { await api('GET', '/sandbox/clock'); location.hash = '#overview'; render(); } catch (err) { sessionStorage.removeItem('auth'); $('#err').textContent = err.message; }
  };
}

let busy = false;
async function render() {
  if (!auth()) return signin();
  const hash = location.hash.slice(1) || 'overview';
  $('#nav').innerHTML = PAGES.map((p) => '<a href="#' + p[0] + '"' + (hash === p[0] ? ' class="on"' : '') + '>' + esc(p[1]) + '</a>').join(' · ') + ' · <a href="#" id="signout">Sign out</a>';
  $('#signout').onclick = () => { sessionStorage.removeItem('auth'); signin(); };
  busy = true;
  try {
    const page = PAGES.find((p) => p[0] === hash);
    $('#main').innerHTML = hash.startsWith('search/') ? await search(decodeURIComponent(hash.slice(7))) : await (page || PAGES[0])[2]();
  } catch (e) { $('#main').innerHTML = '<p class="err">' + esc(e.message) + '</p>'; }
  busy = false;
}
$('#search').onsubmit = (e) => { e.preventDefault(); location.hash = '#search/' + encodeURIComponent(new FormData(e.target).get('q')); };
window.onhashchange = render;
// Live updates: the open page is read again every 3 seconds.
setInterval(() => { if (auth() && !busy && !document.querySelector('input:focus')) render(); }, 3000);
render();
`;
