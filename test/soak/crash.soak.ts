import { crashSuite } from './crash-suite.js';

// `npm run soak:crash`: the crash-injection suite of test/foundation/crash.test.ts, longer
// (CRASH_KILLS kills, 20 by default; CRASH_STREAMS parallel streams, 8 by default). Not part
// of `npm test` (vitest.soak.config.ts includes only test/soak/*.soak.ts).

const kills = Number(process.env.CRASH_KILLS ?? 20);
crashSuite({ kills, streams: Number(process.env.CRASH_STREAMS ?? 8), timeoutMs: 60_000 + kills * 30_000 });
