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
// The WAL's bound (issue 33) and the commits' tail (issue 35). A passive checkpoint copies
// the frames the WAL holds when it starts; the WAL is only rewound (its next commit written
// from its start again) when a write transaction begins with every frame copied, and the
// first commit into a rewound WAL writes the WAL's header and syncs it. Under sustained writes
// the server appends while the worker copies, so the worker alone never catches up. Left to
// the server's connection, the rest of the copy, its syncs, the rewind's sync and truncation
// ran on the event loop: 15–35 ms every twelfth group commit of the payment load, 60–65 % of
// all the time the server spent committing (bench/README.md). So:
// - a pause (`pause`, GroupCommitDriver.exclusive): once a tick finds PAUSE_PAGES frames in
//   the WAL, the worker asks the server for a moment in which it writes nothing. The server
//   commits its open group, stops handing out its connection (requests queue; the event loop
//   stays free) and says 'go'; the worker copies the last frames and rewinds the WAL
//   (RESTART), writes the rewound WAL's first commit itself (the database header, unchanged:
//   that commit's header sync happens on the worker's thread), and says 'done'. The server's
//   connection then only appends. A pause lasts a few ms (the syncs); PAUSE_MAX_MS bounds it;
// - the server's connection still checkpoints by itself past WAL_AUTOCHECKPOINT_PAGES (8 MiB
//   at 4 KiB pages): a worker that fails, or pauses that cannot rewind (another connection
//   reading), leave that, as before: it runs between two transactions, so no writer can starve
//   it, and the next write rewinds the WAL;
// - `journal_size_limit` (WAL_SIZE_LIMIT_BYTES) truncates the file to that size when it is
//   rewound: the WAL never keeps more than it needs;
// - the worker truncates the WAL to nothing (TRUNCATE, without waiting for anyone) once it is
//   over that limit and writes have paused (the WAL holds the same frames as a tick before),
//   e.g. after a checkpoint failed on a full disk and space came back.
// The WAL file stays within WAL_BOUND_BYTES: the server's threshold, plus the commit that
// crossed it (a group of at most 64 transactions), plus what was written while the rewind
// could not happen (a checkpoint of the worker held its lock at that moment: the next commit
// checkpoints again). Durability is unchanged: a commit is in the WAL when it returns, and
// the syncs happen as often or more often.

export const CHECKPOINT_INTERVAL_MS = 100;
/** Frames in the WAL past which the worker asks the server for a pause to copy the rest. */
export const PAUSE_PAGES = 500;
/** The longest the server's writes wait for the worker's copy in a pause (a stuck disk). */
export const PAUSE_MAX_MS = 1_000;
/** The server connection's own checkpoint threshold (pages): past the worker's pauses, for when they cannot rewind. */
export const WAL_AUTOCHECKPOINT_PAGES = 2_000;
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
const restart = db.prepare('pragma wal_checkpoint(RESTART)');
const userVersion = db.prepare('pragma user_version').pluck();
const walFile = workerData.file + '-wal';
let lastFrames = -1;
// A pause asked of the server and not answered yet.
let asked = false;
const timer = setInterval(() => {
  try {
    const { log } = checkpoint.get();
    // The WAL is long enough: ask the server for a moment without writes, in which the last
    // frames are copied and the WAL rewound (see 'go' below).
    if (workerData.pausePages > 0 && !asked && log >= workerData.pausePages) {
      asked = true;
      parentPort.postMessage('pause');
    }
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
  if (m === 'go') {
    // The server writes nothing until told 'done': copy every frame left and rewind the WAL.
    // Busy (another connection reads or writes): nothing happens, the next tick asks again.
    try {
      if (restart.get().busy === 0) {
        // Copied whole and rewound. The first commit into a rewound WAL writes its header
        // and syncs it: made here (one page, the database header, written unchanged), not by
        // the server's next commit.
        db.pragma('user_version = ' + Number(userVersion.get()));
      }
    } catch {}
    asked = false;
    parentPort.postMessage('done');
    return;
  }
  if (m !== 'stop') return;
  clearInterval(timer);
  try { checkpoint.get(); } catch {}
  db.close();
  parentPort.close();
});
`;

export interface Checkpointer {
  /** Pauses of the server's writes that ran (the worker's copies at the end of the WAL). */
  pauses(): number;
  stop(): Promise<void>;
}

/**
 * Runs `fn` while the server's connection writes nothing: after the transactions queued
 * before, with the open group committed (GroupCommitDriver.exclusive).
 */
export type Pause = (fn: () => Promise<void>) => Promise<void>;

/**
 * Start checkpointing `file` (an open WAL database) from a worker thread. With `pause`, the
 * worker asks for a pause of the writes once the WAL holds PAUSE_PAGES and copies the rest
 * then, so the server's connection need not checkpoint (see above).
 */
export function startCheckpointer(file: string, opts: { intervalMs?: number; pause?: Pause } = {}): Checkpointer {
  const module = createRequire(import.meta.url).resolve('better-sqlite3');
  const intervalMs = opts.intervalMs ?? CHECKPOINT_INTERVAL_MS;
  const pausePages = opts.pause ? PAUSE_PAGES : 0;
  const worker = new Worker(WORKER, { eval: true, workerData: { file, module, intervalMs, pausePages, truncateAbove: WAL_SIZE_LIMIT_BYTES }, resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 4 } });
  worker.unref();
  // A worker that fails leaves the server's own checkpoints (WAL_AUTOCHECKPOINT_PAGES): nothing else to do.
  worker.on('error', () => {});
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  let stopped: Promise<void> | undefined;
  // The pause in progress: ends when the worker says 'done', exits, or takes too long. A pause
  // asked meanwhile follows it.
  let endPause: (() => void) | undefined;
  let pausing = false;
  let again = false;
  const pause = opts.pause;
  const runPause = async (): Promise<void> => {
    if (!pause) return;
    pausing = true;
    try {
      await pause(async () => {
        if (stopped) return;
        let timer: NodeJS.Timeout | undefined;
        await new Promise<void>((resolve) => {
          endPause = resolve;
          timer = setTimeout(resolve, PAUSE_MAX_MS);
          void exited.then(resolve);
          worker.postMessage('go');
        });
        clearTimeout(timer);
        endPause = undefined;
      });
      pauses += 1;
    } catch {
      // The connection is closing: nothing to pause.
    } finally {
      pausing = false;
    }
    if (again && !stopped) {
      again = false;
      await runPause();
    }
  };
  let pauses = 0;
  if (pause) {
    worker.on('message', (m: unknown) => {
      if (m === 'done') endPause?.();
      else if (m === 'pause' && !stopped) {
        if (pausing) again = true;
        else void runPause();
      }
    });
  }
  return {
    pauses: () => pauses,
    stop() {
      stopped ??= (async () => {
        endPause?.();
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
