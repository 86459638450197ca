import { AsyncResource } from 'node:async_hooks';

// Requests handled in batches, one batch per turn of the event loop (issue 35).
//
// Node parses each connection's request in the poll phase, inside that socket's own
// callback; by default Fastify then runs the whole request (hooks, handler, answer) right
// there, and the answer is written before the next socket's request is even read. Under
// load on a shared machine that interleaving is costly beyond the code it runs: every
// answer written wakes the client, which is scheduled in the middle of the server's turn
// (on two cores, on the server's own), so the server switches out once per request or so
// and comes back to cold caches. `batchPerTurn` gives the first onRequest hook a place to
// wait: the requests that arrive in one poll phase go on, in arrival order, from one
// setImmediate callback (the check phase of the same turn), so the turn reads them all,
// then runs them and writes their answers together. Measured (bench/README.md, "Requests
// in batches per turn"): about a third less CPU per `GET /customers/{id}`, fewer context
// switches per request (0.6–0.7 → about 0.25), nothing else changed: same hooks, same
// order of hooks, same answers. A request waits at most for the rest of its turn's poll
// phase (the other requests' parsing), microseconds when the server is idle. Each request
// goes on in its own async context (an AsyncResource made when it arrives; not
// `AsyncResource.bind`, whose bound function defines two deprecated accessors per call, about
// 2 % of a `POST /customers`): the batch's setImmediate was made in
// the first request's context, and a request made from inside another one's (an app.inject
// within a handler holding an Idempotency-Key claim, kernel/idempotency.ts) must not lend that
// context to the others of its turn.

/**
 * A function that runs `next` after the current poll phase, with every other `next` given to
 * it in the same turn, in order, from one setImmediate callback. A `next` that throws does not
 * stop the others; its error goes to `onError` once they ran (by default thrown again from a
 * tick of its own: an uncaught exception, as where it ran before).
 */
export function batchPerTurn(onError: (err: unknown) => void = throwLater): (next: () => void) => void {
  let queue: Waiting[] | null = null;
  const run = (batch: Waiting[]) => {
    queue = null;
    let failure: { err: unknown } | undefined;
    for (const w of batch) {
      try {
        w.resource.runInAsyncScope(w.next);
      } catch (err) {
        // One request must not leave the others waiting.
        failure ??= { err };
      }
    }
    if (failure) onError(failure.err);
  };
  return (next) => {
    if (queue === null) {
      const batch: Waiting[] = (queue = []);
      setImmediate(run, batch);
    }
    queue.push({ next, resource: new AsyncResource('TurnBatch') });
  };
}

/** A request's `next` and the async context it arrived in. */
interface Waiting {
  next: () => void;
  resource: AsyncResource;
}

function throwLater(err: unknown): void {
  process.nextTick(() => {
    throw err;
  });
}
