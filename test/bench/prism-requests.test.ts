import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse } from '@readme/openapi-parser';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { beforeAll, describe, expect, it } from 'vitest';
import { CREATE_BODY, PRISM_AUTH, PRISM_IDS, PRISM_OPERATIONS, prismCacheDir, prismTargets, quoteBody, referencePath, sharedDir } from '../../bench/prism.js';

// The bench's peer (bench/prism.ts, issue 35): the requests it sends Prism on the four
// operations must be ones the reference accepts, or Prism answers 400/422 and there is no
// ratio. Checked here against the reference itself, without installing or starting Prism
// (npm test never downloads it): each request's operation, path parameters, query,
// security scheme and body (validated with the reference's own request schema).

const ROOT = resolve(import.meta.dirname, '..', '..');
const REFERENCE = [referencePath(sharedDir(ROOT)), '/work/shared/reference/openapi.yaml'].find((p) => existsSync(p));
if (!REFERENCE) console.warn('prism-requests: ../shared/reference/openapi.yaml is absent: the check against the reference is skipped');

type Param = { name: string; in: string; required?: boolean };
type Op = { operationId: string; parameters?: Param[]; security?: Array<Record<string, unknown>>; requestBody?: { required?: boolean; content: Record<string, { schema: unknown }> } };
type Doc = { paths: Record<string, Record<string, Op> & { parameters?: Param[] }>; security?: Array<Record<string, unknown>>; components: { securitySchemes: Record<string, { type: string; scheme?: string }> } };

describe('the bench peer: Prism requests', () => {
  it('the paths, ids and bodies are the ones the service scenarios use, and the cache lies outside the project', () => {
    const t = prismTargets();
    expect(Object.keys(t).sort()).toEqual([...PRISM_OPERATIONS].sort());
    expect(t.customer.path).toBe(`/customers/${encodeURIComponent(PRISM_IDS.customerId)}`);
    expect(JSON.parse(t.create.body!)).toEqual(CREATE_BODY);
    expect(JSON.parse(t.payment.body!)).toEqual(quoteBody(PRISM_IDS.internalAccountId, PRISM_IDS.externalAccountId));
    expect(JSON.parse(t.payment.body!).immediatelyExecute).toBe(true);
    // Basic <base64 of id:secret>, the reference's BasicAuth.
    const m = /^Basic ([A-Za-z0-9+/=]+)$/.exec(PRISM_AUTH);
    expect(Buffer.from(m![1]!, 'base64').toString('utf8')).toMatch(/^[^:]+:.+$/);
    expect(prismCacheDir().startsWith(ROOT)).toBe(false);
    expect(prismCacheDir('/tmp/x')).toBe('/tmp/x');
  });

  describe.skipIf(!REFERENCE)('against the reference', () => {
    let doc: Doc;
    let ajv: { addSchema(s: unknown): void; compile(s: unknown): ((v: unknown) => boolean) & { errors?: unknown } };
    beforeAll(async () => {
      doc = (await parse(REFERENCE!)) as unknown as Doc;
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      ajv = new (Ajv2020 as any)({ strict: false, allErrors: true });
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      (addFormats as any)(ajv);
      ajv.addSchema({ $id: 'https://reference.local/openapi', components: doc.components });
    });

    const bodySchema = (op: Op) => {
      const s = op.requestBody?.content['application/json']?.schema as { $ref?: string } | undefined;
      // Resolve the document's local refs through the schema registered above.
      return s?.$ref ? { $ref: `https://reference.local/openapi${s.$ref}` } : s;
    };

    for (const name of PRISM_OPERATIONS) {
      it(`${name}: the operation, its parameters, BasicAuth and its body as the reference declares them`, () => {
        const t = prismTargets()[name];
        const item = doc.paths[t.template];
        expect(item, t.template).toBeDefined();
        const op = item![t.method.toLowerCase()];
        expect(op?.operationId).toBe(t.operationId);
        // The path matches its template, each parameter a non-empty segment.
        const url = new URL(t.path, 'http://prism.local');
        const pattern = new RegExp(`^${t.template.replace(/\{[^}]+\}/g, '[^/]+')}$`);
        expect(url.pathname).toMatch(pattern);
        // Every query parameter sent is one the operation declares, and every required one is sent.
        const params = [...(item!.parameters ?? []), ...(op!.parameters ?? [])];
        const query = params.filter((p) => p.in === 'query');
        for (const key of url.searchParams.keys()) expect(query.map((p) => p.name), key).toContain(key);
        for (const p of query.filter((q) => q.required)) expect(url.searchParams.has(p.name), p.name).toBe(true);
        // BasicAuth is one of the operation's schemes, and it is HTTP basic.
        const security = op!.security ?? doc.security ?? [];
        expect(security.some((s) => 'BasicAuth' in s)).toBe(true);
        expect(doc.components.securitySchemes.BasicAuth).toMatchObject({ type: 'http', scheme: 'basic' });
        // The body: present exactly when the operation takes one, valid against its schema.
        expect(t.body !== undefined, 'body').toBe(op!.requestBody !== undefined);
        if (t.body !== undefined) {
          const validate = ajv.compile(bodySchema(op!));
          const ok = validate(JSON.parse(t.body));
          expect(ok ? [] : validate.errors, t.body).toEqual([]);
        }
      });
    }

    it('the body check rejects what Prism would reject (a quote without its amount, a customer without its type)', () => {
      const quote = ajv.compile(bodySchema(doc.paths['/quotes']!.post!));
      const { lockedCurrencyAmount: _, ...noAmount } = quoteBody(PRISM_IDS.internalAccountId, PRISM_IDS.externalAccountId);
      expect(quote(noAmount)).toBe(false);
      const customer = ajv.compile(bodySchema(doc.paths['/customers']!.post!));
      expect(customer({ fullName: 'No Type' })).toBe(false);
      expect(customer(CREATE_BODY)).toBe(true);
    });
  });
});
