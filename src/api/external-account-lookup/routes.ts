import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { authOf, errorResponses, nowOf } from '../../kernel/http.js';
import { ExternalAccountLookupParams, ExternalAccountLookupQuery, ReceiverExternalAccountLookupResponse } from './schemas.js';
import { lookupExternalAccount } from './service.js';

export const externalAccountLookupRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { store, clock } = app.deps;

  app.get(
    '/receiver/external-account/:accountId',
    {
      // The lookup accepts HTTP Basic credentials only (an agent's Bearer token answers 401).
      config: { auth: 'basic' },
      schema: {
        tags: ['Cross-Currency Transfers'],
        operationId: 'lookupExternalAccount',
        summary: 'Look up an external account for payment',
        description:
          'Which currencies can be sent to the external account, the current estimated exchange rates from the sending currency ' +
          "(by default the sender's default currency), and the minimum and maximum amounts on both sides. The lookupId goes into the quote request.",
        params: ExternalAccountLookupParams,
        querystring: ExternalAccountLookupQuery,
        response: { 200: ReceiverExternalAccountLookupResponse, ...errorResponses(404, 412, 424) },
      },
    },
    async (req) => lookupExternalAccount(store.db, authOf(req).platform, nowOf(req, clock), req.params.accountId, req.query),
  );
};
