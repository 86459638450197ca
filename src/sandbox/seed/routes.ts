import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { errorResponses } from '../../kernel/http.js';
import { SeedResponse } from './schemas.js';
import { type Inject, seedSandbox } from './service.js';

export const sandboxSeedRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const inject: Inject = async (r) => {
    const res = await app.inject({ method: r.method as 'GET', url: r.url, headers: r.headers, ...(r.payload !== undefined ? { payload: r.payload } : {}) });
    return { statusCode: res.statusCode, body: res.body };
  };
  app.post(
    '/sandbox/seed',
    {
      config: { auth: 'basic', permission: 'MANAGE', extension: true },
      schema: {
        tags: ['Sandbox'],
        operationId: 'seedSandbox',
        summary: 'Create the demo data set',
        description:
          'Creates the data set of `payments-service seed` on the caller’s platform through its own public API, with the caller’s credentials (each request is in the request log): ' +
          'four customers (an approved business, one waiting for documents, two individuals), their internal accounts, funding, three external accounts and three payments ' +
          '(COMPLETED, FAILED, PROCESSING), a 5-second clock advance and the test webhook. Answers what it made. A refused step stops it with that step’s error. ' +
          'Permission MANAGE (and TRANSACT for the payments).',
        response: { 200: SeedResponse, ...errorResponses(403, 404, 409, 429) },
      },
    },
    async (req) => seedSandbox(inject, req.headers.authorization ?? ''),
  );
};
