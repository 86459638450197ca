import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

// WAL checkpoints of a SQLite file, off the main thread. A checkpoint copies the pages the
// WAL holds back into the database file and syncs both (synchronous = NORMAL syncs at each
// checkpoint, not at each commit); run by the connection that happens to commit past
// `wal_autocheckpoint` pages, as SQLite does by default, it stopped the event loop for the
// syncs (often 5–20 ms) every few dozen commits under load. Here a worker thread with its
// own connection runs a PASSIVE checkpoint (it waits for no reader or writer) every
// CHECKPOINT_INTERVAL_MS. Durability is unchanged: a commit is in the WAL when it returns,
// as before, and the syncs happen as often or more often.
//
// The WAL's bound (issue 33). A passive checkpoint copies the frames the WAL holds when it
// starts; the WAL is only rewound (its next commit written from its start again) when a
// write transaction begins with every frame copied. Under sustained writes the server
// appends while the worker copies, so the worker never catches up and the WAL grew until
// the server's own checkpoint at 10,000 pages (40 MB) rewound it; on a disk that filled
// meanwhile, those 40 MB were not given back. So:
// - the server's connection checkpoints by itself past WAL_AUTOCHECKPOINT_PAGES (SQLite's
//   default, 4 MiB at 4 KiB pages): most frames are copied by the worker by then, so its
//   share is the rest and the syncs. It runs in the committing connection between two
//   transactions, so no writer can starve it, and the next write rewinds the WAL;
// - `journal_size_limit` (WAL_SIZE_LIMIT_BYTES) truncates the file to that size when it is
//   rewound: the WAL never keeps more than it needs;
// - the worker truncates the WAL to nothing (TRUNCATE, without waiting for anyone) once it is
//   over that limit and writes have paused (the WAL holds the same frames as a tick before),
//   e.g. after a checkpoint failed on a full disk and space came back.
// The WAL file stays within WAL_BOUND_BYTES: the threshold, plus the commit that crossed it
// (a group of at most 64 transactions), plus what was written while the rewind could not
// happen (a checkpoint of the worker held its lock at that moment: the next commit checkpoints
// again). Measured 3.3–8.1 MiB under writers that never pause (docs/reliability.md).

export const CHECKPOINT_INTERVAL_MS = 250;
/** The server connection's own checkpoint threshold (pages): SQLite's default. */
export const WAL_AUTOCHECKPOINT_PAGES = 1_000;
/** `journal_size_limit`: a rewound WAL is truncated to this; above it, a WAL idle for a tick is truncated by the worker. */
export const WAL_SIZE_LIMIT_BYTES = 4 * 2 ** 20;
/** The most the WAL file holds, under sustained writes and after a full disk (docs/reliability.md). */
export const WAL_BOUND_BYTES = 16 * 2 ** 20;

const WORKER = `
const { statSync } = require('node:fs');
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.module);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('busy_timeout = 0');
const checkpoint = db.prepare('pragma wal_checkpoint(PASSIVE)');
const truncate = db.prepare('pragma wal_checkpoint(TRUNCATE)');
const walFile = workerData.file + '-wal';
let lastFrames = -1;
const timer = setInterval(() => {
  try {
    const { log } = checkpoint.get();
    // The WAL holds the same frames as at the last tick: nobody wrote meanwhile. Over the
    // limit, truncate it (without waiting: a writer that came back keeps it, for next time).
    const idle = log === lastFrames;
    lastFrames = log;
    if (idle && log > 0) {
      let size = 0;
      try { size = statSync(walFile).size; } catch {}
      if (size > workerData.truncateAbove) truncate.get();
    }
  } catch {
    // Busy, a full disk, closing: the next tick tries again.
    lastFrames = -1;
  }
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
  const worker = new Worker(WORKER, { eval: true, workerData: { file, module, intervalMs, truncateAbove: WAL_SIZE_LIMIT_BYTES }, resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 4 } });
  worker.unref();
  // A worker that fails leaves the server's own checkpoints (WAL_AUTOCHECKPOINT_PAGES): nothing else to do.
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
