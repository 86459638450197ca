import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { authOf, errorResponses, nowOf } from '../../kernel/http.js';
import { InternalAccount } from './shapes.js';
import { FundParams, SandboxFundRequest } from './schemas.js';
import { fundInternalAccount } from './service.js';

export const sandboxFundingRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { store, clock } = app.deps;

  app.post(
    '/sandbox/internal-accounts/:accountId/fund',
    {
      config: { auth: 'basic' },
      schema: {
        tags: ['Sandbox'],
        operationId: 'sandboxFundInternalAccount',
        summary: 'Simulate funding an internal account',
        description:
          'Credits the internal account at once through the ledger (amount in the smallest unit of the account currency), as a deposit: a COMPLETED INCOMING transaction (GET /transactions) and its INCOMING_PAYMENT.COMPLETED webhook. Answers the account with its new balance.',
        params: FundParams,
        body: SandboxFundRequest,
        response: { 200: InternalAccount, ...errorResponses(403, 404) },
      },
    },
    async (req) => fundInternalAccount(store, authOf(req).platform.id, nowOf(req, clock).at, req.params.accountId, req.body.amount),
  );
};
