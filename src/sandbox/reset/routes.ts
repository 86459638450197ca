import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { adminAuth } from '../../kernel/auth.js';
import { authOf, errorResponses } from '../../kernel/http.js';
import { PlatformIdParams } from './shapes.js';
import { resetSandbox } from './service.js';

export const SandboxReset = Type.Object(
  {
    platformIds: Type.Array(Type.String(), { description: 'The platforms reset' }),
    deleted: Type.Record(Type.String(), Type.Integer(), { description: 'Rows deleted per table (tables that had some)' }),
    resetAt: Type.String({ format: 'date-time' }),
  },
  { title: 'SandboxReset' },
);

const description =
  'Deletes everything the platform made in the sandbox, in one transaction: customers (with their documents, verifications, beneficial owners), ' +
  'internal and external accounts and their ledger, quotes, transactions, jobs, events, webhook deliveries, Idempotency-Key answers and the request log. ' +
  'Keeps the platform, its API tokens, its configuration, its webhook signing key and its sandbox clock; its own internal accounts are opened again, empty. ' +
  'Nothing of another platform is touched. Permission MANAGE.';

export const sandboxResetRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/sandbox/reset',
    {
      config: { auth: 'basic', permission: 'MANAGE', extension: true },
      schema: { tags: ['Sandbox'], operationId: 'resetSandbox', summary: 'Reset the platform\'s sandbox', description, response: { 200: SandboxReset, ...errorResponses(403) } },
    },
    async (req) => resetSandbox(app.deps, authOf(req).platform.id),
  );
};

/** The operator's resets (under /admin, Bearer PAYMENTS_ADMIN_KEY): one platform, or every platform. */
export const sandboxResetAdminRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.addHook('onRequest', adminAuth(app.deps.config.adminKey!));
  app.post('/sandbox/reset', { schema: { hide: true, response: { 200: SandboxReset, ...errorResponses() } } }, async () => resetSandbox(app.deps, null));
  app.post('/platforms/:id/reset', { schema: { hide: true, params: PlatformIdParams, response: { 200: SandboxReset, ...errorResponses(404) } } }, async (req) =>
    resetSandbox(app.deps, req.params.id),
  );
};
