import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { authOf, errorResponses, NoContent, nowOf } from '../../kernel/http.js';
import { SandboxFault, SandboxFaultCreateRequest, SandboxFaultIdParams, SandboxFaultList, SandboxFaultsCleared } from './schemas.js';
import { clearFaults, createFault, listFaults, removeFault } from './service.js';

const tags = ['Sandbox'];

export const sandboxFaultsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { store, clock } = app.deps;

  app.post(
    '/sandbox/faults',
    {
      config: { auth: 'basic', permission: 'MANAGE', extension: true },
      schema: {
        tags,
        operationId: 'createSandboxFault',
        summary: 'Add a fault rule',
        description:
          'Makes the next `count` matching calls (or a `fraction` of them for `durationSeconds` of real time) of an operation fail the way the real service can: ' +
          '500 INTERNAL_ERROR, 503 SERVICE_UNAVAILABLE or 429 RATE_LIMITED with Retry-After (answered before the operation runs: nothing is written), an answer after `delayMs` (DELAY), ' +
          'or the answer dropped after the operation committed (COMMIT_THEN_DROP: the connection closes with no answer; the Idempotency-Key answer is stored). ' +
          'Webhook kinds delay (WEBHOOK_DELAY), duplicate (WEBHOOK_DUPLICATE) or reorder (WEBHOOK_OUT_OF_ORDER) the platform\'s deliveries. ' +
          'Only the caller\'s platform is affected; the faults\' own routes are never faulted. Every faulted request is marked in the request log. ' +
          'Every invalid field is named in details.errors. See docs/sandbox/faults.md for the retry rules a client should follow. Permission MANAGE.',
        body: SandboxFaultCreateRequest,
        response: { 201: SandboxFault, ...errorResponses(403) },
      },
    },
    async (req, reply) => reply.code(201).send(await createFault(store, authOf(req).platform.id, nowOf(req, clock).at, req.body)),
  );

  app.get(
    '/sandbox/faults',
    {
      config: { auth: 'basic', extension: true },
      schema: {
        tags,
        operationId: 'listSandboxFaults',
        summary: 'The active fault rules',
        description: 'The platform\'s rules still in force, oldest first, with what is left of their counts. Permission VIEW.',
        response: { 200: SandboxFaultList, ...errorResponses() },
      },
    },
    async (req) => listFaults(store.db, authOf(req).platform.id),
  );

  app.delete(
    '/sandbox/faults/:faultId',
    {
      config: { auth: 'basic', permission: 'MANAGE', extension: true },
      schema: {
        tags,
        operationId: 'deleteSandboxFault',
        summary: 'Remove a fault rule',
        description: 'The rule stops at once (in every server process: on PostgreSQL a moment later in the others). Permission MANAGE.',
        params: SandboxFaultIdParams,
        response: { 204: NoContent, ...errorResponses(403, 404) },
      },
    },
    async (req, reply) => {
      await removeFault(store.db, authOf(req).platform.id, req.params.faultId);
      return reply.code(204).send(null);
    },
  );

  app.delete(
    '/sandbox/faults',
    {
      config: { auth: 'basic', permission: 'MANAGE', extension: true },
      schema: {
        tags,
        operationId: 'clearSandboxFaults',
        summary: 'Remove every fault rule',
        description: 'Removes all the platform\'s rules. Permission MANAGE.',
        response: { 200: SandboxFaultsCleared, ...errorResponses(403) },
      },
    },
    async (req) => clearFaults(store.db, authOf(req).platform.id),
  );
};
