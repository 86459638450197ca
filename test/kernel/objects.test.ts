import { describe, expect, it } from 'vitest';
import { extended } from '../../src/kernel/objects.js';

// kernel/objects.ts: `extended(base, extra)` is `{ ...base, ...extra }` (issue 35), built without V8's slow path.

describe('extended', () => {
  it('has the keys and values of { ...base, ...extra }, in the same order', () => {
    const base = { id: 'a', status: 'PENDING', n: 1, gone: undefined, nested: { x: 1 } };
    const extra = { created_at: 't', status: 'PROCESSING', n: 2 };
    const got = extended(base, extra);
    const want = { ...base, ...extra };
    expect(Object.keys(got)).toEqual(Object.keys(want));
    expect(JSON.stringify(got)).toBe(JSON.stringify(want));
    expect(got.nested).toBe(base.nested);
    expect('gone' in got).toBe(true);
    // The base is not changed.
    expect(base.status).toBe('PENDING');
    expect(Object.keys(base)).toEqual(['id', 'status', 'n', 'gone', 'nested']);
  });
});
