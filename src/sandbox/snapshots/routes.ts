import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { adminAuth } from '../../kernel/auth.js';
import { authOf, errorResponses, NoContent } from '../../kernel/http.js';
import { SandboxSnapshot, SandboxSnapshotList, SandboxSnapshotRestore, SnapshotCreateQuery, SnapshotCreateRequest, SnapshotNameParams } from './schemas.js';
import { deleteSnapshot, getSnapshot, listSnapshots, restoreSnapshot, saveSnapshot, WHOLE_STORE } from './service.js';

const tags = ['Sandbox'];

const saved =
  'every row of the platform (customers, accounts and their ledger, quotes, transactions, pending jobs, events and webhook deliveries, Idempotency-Key answers…), ' +
  'its configuration (webhook endpoint, currencies, fees), its sandbox settings and its sandbox clock; never its API tokens nor another platform\'s rows';

/** Platform snapshots (docs/sandbox/snapshots.md). */
export const sandboxSnapshotRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/sandbox/snapshots',
    {
      config: { auth: 'basic', permission: 'MANAGE', extension: true },
      schema: {
        tags,
        operationId: 'createSandboxSnapshot',
        summary: 'Save the platform\'s sandbox as a snapshot',
        description: `Saves, under a name unique to the platform, ${saved}. A name already taken is 409 CONFLICT, unless \`replace=true\`. Permission MANAGE.`,
        querystring: SnapshotCreateQuery,
        body: SnapshotCreateRequest,
        response: { 201: SandboxSnapshot, ...errorResponses(403, 409) },
      },
    },
    async (req, reply) => reply.code(201).send(await saveSnapshot(app.deps, authOf(req).platform.id, req.body.name, req.query.replace ?? false)),
  );

  app.get(
    '/sandbox/snapshots',
    {
      config: { auth: 'basic', extension: true },
      schema: {
        tags,
        operationId: 'listSandboxSnapshots',
        summary: 'List the platform\'s snapshots',
        description: 'The platform\'s snapshots by name, with when each was saved, its sandbox time and its rows per table. Permission VIEW.',
        response: { 200: SandboxSnapshotList, ...errorResponses() },
      },
    },
    async (req) => listSnapshots(app.deps, authOf(req).platform.id),
  );

  app.get(
    '/sandbox/snapshots/:name',
    {
      config: { auth: 'basic', extension: true },
      schema: {
        tags,
        operationId: 'getSandboxSnapshot',
        summary: 'Read a snapshot',
        description: 'One snapshot of the platform (another platform\'s is 404). Permission VIEW.',
        params: SnapshotNameParams,
        response: { 200: SandboxSnapshot, ...errorResponses(404) },
      },
    },
    async (req) => getSnapshot(app.deps, authOf(req).platform.id, req.params.name),
  );

  app.post(
    '/sandbox/snapshots/:name/restore',
    {
      config: { auth: 'basic', permission: 'MANAGE', extension: true },
      schema: {
        tags,
        operationId: 'restoreSandboxSnapshot',
        summary: 'Restore a snapshot',
        description:
          'Puts the platform back as the snapshot saved it, in one transaction: its rows now are deleted and the saved ones written back, with its configuration, ' +
          'sandbox settings and sandbox clock (back to the snapshot\'s sandbox time, so pending jobs are as far ahead as they were). API tokens and other platforms are untouched; ' +
          'the request log is cleared. The snapshot stays. Permission MANAGE.',
        params: SnapshotNameParams,
        response: { 200: SandboxSnapshotRestore, ...errorResponses(403, 404, 409) },
      },
    },
    async (req) => restoreSnapshot(app.deps, authOf(req).platform.id, req.params.name),
  );

  app.delete(
    '/sandbox/snapshots/:name',
    {
      config: { auth: 'basic', permission: 'MANAGE', extension: true },
      schema: {
        tags,
        operationId: 'deleteSandboxSnapshot',
        summary: 'Delete a snapshot',
        description: 'Deletes the snapshot (nothing else changes). Permission MANAGE.',
        params: SnapshotNameParams,
        response: { 204: NoContent, ...errorResponses(403, 404) },
      },
    },
    async (req, reply) => {
      await deleteSnapshot(app.deps, authOf(req).platform.id, req.params.name);
      return reply.code(204).send(null);
    },
  );
};

/** The operator's whole-store snapshots (under /admin, Bearer PAYMENTS_ADMIN_KEY). */
export const sandboxSnapshotAdminRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.addHook('onRequest', adminAuth(app.deps.config.adminKey!));
  const hide = true;
  app.post('/snapshots', { schema: { hide, querystring: SnapshotCreateQuery, body: SnapshotCreateRequest, response: { 201: SandboxSnapshot, ...errorResponses(409) } } }, async (req, reply) =>
    reply.code(201).send(await saveSnapshot(app.deps, WHOLE_STORE, req.body.name, req.query.replace ?? false)),
  );
  app.get('/snapshots', { schema: { hide, response: { 200: SandboxSnapshotList, ...errorResponses() } } }, async () => listSnapshots(app.deps, WHOLE_STORE));
  app.get('/snapshots/:name', { schema: { hide, params: SnapshotNameParams, response: { 200: SandboxSnapshot, ...errorResponses(404) } } }, async (req) =>
    getSnapshot(app.deps, WHOLE_STORE, req.params.name),
  );
  app.post('/snapshots/:name/restore', { schema: { hide, params: SnapshotNameParams, response: { 200: SandboxSnapshotRestore, ...errorResponses(404, 409) } } }, async (req) =>
    restoreSnapshot(app.deps, WHOLE_STORE, req.params.name),
  );
  app.delete('/snapshots/:name', { schema: { hide, params: SnapshotNameParams, response: { 204: NoContent, ...errorResponses(404) } } }, async (req, reply) => {
    await deleteSnapshot(app.deps, WHOLE_STORE, req.params.name);
    return reply.code(204).send(null);
  });
};
