// The server of test/foundation/upload-memory.test.ts, in its own process (run with
// --expose-gc): starts like `payments-service serve` from the environment, and answers the
// parent's "measure" message (over the IPC channel) with its memory after full collections.
import { loadConfig } from '../../src/config.js';
import { startServer } from '../../src/server.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');

const running = await startServer(loadConfig(process.env), { logger: false });

async function measure(): Promise<NodeJS.MemoryUsage> {
  // A few full collections with turns of the event loop between them, so finalizers and
  // freed external buffers are accounted for.
  for (let i = 0; i < 4; i++) {
    gc!();
    await new Promise((r) => setTimeout(r, 100));
  }
  return process.memoryUsage();
}

process.on('message', (m: unknown) => {
  if (m === 'measure') void measure().then((usage) => process.send!({ usage }));
  if (m === 'stop') void running.close().then(() => process.exit(0));
});
process.send!({ ready: true });
