import { crashSuite } from '../soak/crash-suite.js';

// Exactly once per Idempotency-Key under crashes, with real processes (docs/reliability.md):
// parallel money-moving requests with keys (quote with immediatelyExecute, execute,
// transfer-out, sandbox fund, sandbox UMA receive), SIGKILL at a random moment, restart on
// the same store, retry every lost answer with its key after a sandbox clock advance, check:
// each key moved money at most once, every answer replays byte for byte, ledger invariants,
// every transaction terminal. Small for CI (2 kills); the longer run is `npm run soak:crash`.

crashSuite({ kills: 2, streams: 6, timeoutMs: 120_000 });
