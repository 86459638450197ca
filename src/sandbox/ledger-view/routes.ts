import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { authOf, errorResponses } from '../../kernel/http.js';
import { LedgerEntryListResponse, LedgerEntryParams, LedgerEntryQuery } from './schemas.js';
import { listLedgerEntries } from './service.js';

// The ledger entries of an internal account: a sandbox extension (the reference has no
// endpoint for them), read by the dashboard's account page.
export const sandboxLedgerRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/sandbox/internal-accounts/:accountId/ledger-entries',
    {
      config: { auth: 'basic', extension: true },
      schema: {
        tags: ['Sandbox'],
        operationId: 'listSandboxLedgerEntries',
        summary: 'The ledger entries of an internal account',
        description:
          'Every ledger entry that moved the internal account, newest first, with its lines on the account (bucket and signed amount), the net change of the available ' +
          'and total balances, what caused it (referenceId, usually a transaction) and when. Another platform’s account, or an unknown one: 404. Permission VIEW.',
        params: LedgerEntryParams,
        querystring: LedgerEntryQuery,
        response: { 200: LedgerEntryListResponse, ...errorResponses(404) },
      },
    },
    async (req) => listLedgerEntries(app.deps.store.db, authOf(req).platform.id, req.params.accountId, req.query),
  );
};
