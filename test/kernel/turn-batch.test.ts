import { AsyncLocalStorage } from 'node:async_hooks';
import { describe, expect, it } from 'vitest';
import { batchPerTurn } from '../../src/kernel/turn-batch.js';

// kernel/turn-batch.ts: the requests of one event-loop turn go on together (issue 35).

const nextImmediate = () => new Promise<void>((r) => setImmediate(r));

describe('batchPerTurn', () => {
  it('runs what one turn gives it later, together, in order, and a later turn as a batch of its own', async () => {
    const batch = batchPerTurn();
    const ran: string[] = [];
    batch(() => ran.push('a'));
    batch(() => ran.push('b'));
    batch(() => ran.push('c'));
    // Nothing runs where it is given (that was the request's own socket callback).
    expect(ran).toEqual([]);
    // A microtask or a tick of the same turn comes before the batch.
    await Promise.resolve();
    expect(ran).toEqual([]);
    await nextImmediate();
    expect(ran).toEqual(['a', 'b', 'c']);
    batch(() => ran.push('d'));
    expect(ran).toEqual(['a', 'b', 'c']);
    await nextImmediate();
    expect(ran).toEqual(['a', 'b', 'c', 'd']);
  });

  it('one that throws leaves the others running and hands its error on once they ran', async () => {
    const errors: unknown[] = [];
    const ran: string[] = [];
    const batch = batchPerTurn((err) => errors.push([err, [...ran]]));
    batch(() => ran.push('a'));
    batch(() => {
      throw new Error('boom');
    });
    batch(() => ran.push('c'));
    await nextImmediate();
    expect(ran).toEqual(['a', 'c']);
    expect(errors).toEqual([[new Error('boom'), ['a', 'c']]]);
  });

  it('each goes on in the async context it was given in, not in the first one’s', async () => {
    const als = new AsyncLocalStorage<string>();
    const batch = batchPerTurn();
    const seen: Array<string | undefined> = [];
    // The first of the turn comes from inside a context (a request made within another request's claim).
    als.run('claim of the first', () => batch(() => seen.push(als.getStore())));
    batch(() => seen.push(als.getStore()));
    als.run('its own', () => batch(() => seen.push(als.getStore())));
    await nextImmediate();
    expect(seen).toEqual(['claim of the first', undefined, 'its own']);
  });
});
