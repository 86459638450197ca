// The machine's limit for the benchmark's ratios: a bare node:http server answering one
// fixed small JSON body to every request, with no framework, no routing and no database.
// Run by bench/run.ts in its own process and measured with the same client settings as
// the service. Prints `bare-server listening <port>` once it listens (PORT, default 0 = any free port).
import { createServer } from 'node:http';

const BODY = Buffer.from(JSON.stringify({ status: 'ok', service: 'bare', version: '2025-10-13' }));

const server = createServer((req, res) => {
  // Drain a request body if there is one, then answer the same thing every time.
  req.resume();
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': BODY.length });
  res.end(BODY);
});
server.keepAliveTimeout = 72_000;

server.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1', () => {
  const addr = server.address();
  process.stdout.write(`bare-server listening ${typeof addr === 'object' && addr ? addr.port : addr}\n`);
});

const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
