import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

// WAL checkpoints of a SQLite file, off the main thread. A checkpoint copies the pages the
// WAL holds back into the database file and syncs both (synchronous = NORMAL syncs at each
// checkpoint, not at each commit); run by the connection that happens to commit past
// `wal_autocheckpoint` pages, as SQLite does by default, it stopped the event loop for the
// syncs (often 5–20 ms) every few dozen commits under load. Here a worker thread with its
// own connection runs a PASSIVE checkpoint (it waits for no reader or writer) every
// CHECKPOINT_INTERVAL_MS; the server's connection keeps `wal_autocheckpoint` at a high
// value as a backstop, should the worker fall behind. Durability is unchanged: a commit is
// in the WAL when it returns, as before, and the syncs happen as often or more often.

export const CHECKPOINT_INTERVAL_MS = 250;
/** The server connection's own checkpoint threshold while a worker checkpoints (pages). */
export const BACKSTOP_AUTOCHECKPOINT = 10_000;

const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.module);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('busy_timeout = 0');
const checkpoint = db.prepare('pragma wal_checkpoint(PASSIVE)');
const timer = setInterval(() => {
  try { checkpoint.get(); } catch { /* busy or closing: the next tick tries again */ }
}, workerData.intervalMs);
parentPort.on('message', (m) => {
  if (m !== 'stop') return;
  clearInterval(timer);
  try { checkpoint.get(); } catch {}
  db.close();
  parentPort.close();
});
`;

export interface Checkpointer {
  stop(): Promise<void>;
}

/** Start checkpointing `file` (an open WAL database) from a worker thread. */
export function startCheckpointer(file: string, intervalMs = CHECKPOINT_INTERVAL_MS): Checkpointer {
  const module = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(WORKER, { eval: true, workerData: { file, module, intervalMs }, resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 4 } });
  worker.unref();
  // A worker that fails leaves the server's own (backstop) checkpoints: nothing else to do.
  worker.on('error', () => {});
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  let stopped: Promise<void> | undefined;
  return {
    stop() {
      stopped ??= (async () => {
        worker.postMessage('stop');
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<void>((resolve) => {
          timer = setTimeout(() => void worker.terminate().then(() => resolve(), () => resolve()), 2_000);
        });
        await Promise.race([exited, late]);
        clearTimeout(timer);
      })();
      return stopped;
    },
  };
}
