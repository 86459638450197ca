import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { invalidInput } from '../../kernel/errors.js';
import { errorResponses } from '../../kernel/http.js';
import { adminAuth } from '../../kernel/auth.js';
import { type PlatformLimitsPatch } from './shapes.js';
import { Platform, PlatformCreated, PlatformCreateRequest, PlatformIdParams, PlatformPatchRequest } from './schemas.js';
import { createPlatform, getPlatform, getPlatforms, patchBodyErrors, patchPlatform } from './service.js';

// The operator API: platforms and their sandbox options. Bearer PAYMENTS_ADMIN_KEY.
// Registered only when the key is set; otherwise every /admin path answers 404.


export const adminRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { store, clock, config } = app.deps;
  const adminKey = config.adminKey!;

  app.addHook('onRequest', adminAuth(adminKey));

  const schema = { hide: true };

  app.post('/platforms', { schema: { ...schema, body: PlatformCreateRequest, response: { 201: PlatformCreated, ...errorResponses() } } }, async (req, reply) => {
    const created = await createPlatform(store.db, clock, app.deps.sealer, req.body);
    return reply.code(201).send(created);
  });

  app.get('/platforms', { schema: { ...schema, response: { 200: Type.Object({ data: Type.Array(Platform) }), ...errorResponses() } } }, async () => ({
    data: await getPlatforms(store.db),
  }));

  app.get('/platforms/:id', { schema: { ...schema, params: PlatformIdParams, response: { 200: Platform, ...errorResponses(404) } } }, async (req) =>
    getPlatform(store.db, req.params.id),
  );

  app.patch(
    '/platforms/:id',
    {
      // Every problem of the body in one 400: the schema's, `regulated`, and those of `limits`.
      preValidation: async (req) => {
        const errors = patchBodyErrors(req.body ?? null);
        if (errors.length > 0) throw invalidInput(errors);
      },
      schema: { ...schema, params: PlatformIdParams, body: PlatformPatchRequest, response: { 200: Platform, ...errorResponses(404) } },
    },
    async (req) => patchPlatform(store.db, clock, req.params.id, { ...req.body, limits: req.body.limits as PlatformLimitsPatch | null | undefined }),
  );
};
