import Fastify from 'fastify';
import { Type } from 'typebox';
import { describe, expect, it } from 'vitest';
import { lazySerializerFactory, OneOf, taggedForSerializer } from '../../src/kernel/validation.js';

// Response serializers pick a tagged oneOf's branch by its tag (issue 15), not by validating
// every branch; what they write is what the oneOf serializer wrote.

const A = Type.Object({ kind: Type.Literal('A'), a: Type.String({ format: 'date-time' }), shared: Type.Integer() });
const B = Type.Object({ kind: Type.Literal('B'), b: Type.Array(Type.String()), shared: Type.Integer() });
const C = Type.Object({ kind: Type.Literal('C'), c: Type.Optional(Type.Boolean()) });
const Tagged = OneOf('kind', [A, B, C], { title: 'Tagged' });

describe('tagged oneOf for the serializer', () => {
  it('becomes if/then/else on the tag; the original schema is untouched', () => {
    const out = taggedForSerializer(Type.Object({ data: Type.Array(Tagged) })) as { properties: { data: { items: Record<string, unknown> } } };
    const item = out.properties.data.items;
    expect(item.oneOf).toBeUndefined();
    expect(item.if).toEqual({ type: 'object', properties: { kind: { const: 'A' } }, required: ['kind'] });
    expect((item.else as Record<string, unknown>).if).toEqual({ type: 'object', properties: { kind: { const: 'B' } }, required: ['kind'] });
    expect(((item.else as Record<string, unknown>).else as { properties: { kind: { const: string } } }).properties.kind.const).toBe('C');
    expect((Tagged as unknown as { oneOf: unknown[] }).oneOf).toHaveLength(3);
    // A oneOf without a tag value per branch stays as it is.
    const untagged = { discriminator: { propertyName: 'kind' }, oneOf: [A, Type.Object({ x: Type.String() })] };
    expect((taggedForSerializer(untagged) as { oneOf?: unknown[] }).oneOf).toHaveLength(2);
  });

  it('serializes each branch with its own properties, dropping what the branch does not declare', async () => {
    const app = Fastify({ schemaController: { compilersFactory: { buildSerializer: lazySerializerFactory } } });
    const items = [
      { kind: 'A', a: '2026-11-27T00:00:00.000Z', shared: 1, b: ['not in A'] },
      { kind: 'B', b: ['x', 'y'], shared: 2, a: 'not in B' },
      { kind: 'C', c: true, shared: 3 },
    ];
    app.get('/', { schema: { response: { 200: Type.Object({ data: Type.Array(Tagged) }) } } }, async () => ({ data: items }));
    const res = await app.inject({ method: 'GET', url: '/' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      data: [
        { kind: 'A', a: '2026-11-27T00:00:00.000Z', shared: 1 },
        { kind: 'B', b: ['x', 'y'], shared: 2 },
        { kind: 'C', c: true },
      ],
    });
    await app.close();
  });
});
