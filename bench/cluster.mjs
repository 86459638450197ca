// `--processes N` of the benchmark: N server processes behind Node's cluster module, all
// listening on one PORT (the primary accepts and hands connections round-robin).
//   node bench/cluster.mjs <N> <server entry> [args…]     e.g. 2 dist/bundle/main.js serve
// Each worker runs the server entry exactly as `node <entry> serve` would, with the same
// environment. Prints `bench-cluster workers <pid>,<pid>…` once every worker is online and
// `bench-cluster listening` once every worker listens.
// SIGTERM/SIGINT are passed to every worker (each stops gracefully); the primary exits 0
// when all of them exited 0, else 1. A worker that dies on its own stops the whole cluster.
import cluster from 'node:cluster';

const [count, entry, ...args] = process.argv.slice(2);
const n = Number(count);
if (!Number.isInteger(n) || n < 1 || !entry) {
  process.stderr.write('usage: node bench/cluster.mjs <processes> <server entry> [args…]\n');
  process.exit(2);
}

cluster.setupPrimary({ exec: entry, args });
let stopping = false;
let failed = false;
let exited = 0;
const online = new Set();
const listening = new Set();

for (let i = 0; i < n; i++) cluster.fork();

cluster.on('online', (worker) => {
  online.add(worker.process.pid);
  if (online.size === n) process.stdout.write(`bench-cluster workers ${[...online].join(',')}\n`);
});

cluster.on('listening', (worker) => {
  listening.add(worker.process.pid);
  if (listening.size === n) process.stdout.write('bench-cluster listening\n');
});

cluster.on('exit', (worker, code, signal) => {
  if (code !== 0) failed = true;
  if (!stopping) {
    process.stderr.write(`bench-cluster: worker ${worker.process.pid} exited (code ${code}, signal ${signal}); stopping\n`);
    stop();
  }
  if (++exited === n) process.exit(failed ? 1 : 0);
});

function stop() {
  if (stopping) return;
  stopping = true;
  for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
