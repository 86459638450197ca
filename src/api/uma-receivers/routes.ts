import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { authOf, errorResponses, nowOf } from '../../kernel/http.js';
import { ReceiverUmaLookupResponse, UmaLookupParams, UmaLookupQuery } from './schemas.js';
import { lookupUmaReceiver } from './service.js';

const tags = ['Cross-Currency Transfers'];

export const umaReceiversRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { store, clock } = app.deps;

  app.get(
    '/receiver/uma/:receiverUmaAddress',
    {
      config: { auth: 'basic' },
      schema: {
        tags,
        operationId: 'lookupUma',
        summary: 'Look up an UMA address for payment',
        description:
          'Which currencies the UMA address can receive, at which estimated rates (from sendingCurrency, by default the sender\'s first currency), ' +
          'with receiving bounds and sending bounds (platform fees included). The lookupId goes into the quote request.',
        params: UmaLookupParams,
        querystring: UmaLookupQuery,
        response: { 200: ReceiverUmaLookupResponse, ...errorResponses(404, 412, 424) },
      },
    },
    async (req) => lookupUmaReceiver(store.db, authOf(req).platform, nowOf(req, clock), req.params.receiverUmaAddress, req.query),
  );
};
