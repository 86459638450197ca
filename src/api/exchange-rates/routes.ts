import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { authOf, errorResponses, nowOf } from '../../kernel/http.js';
import { ExchangeRateListResponse, ExchangeRateQuery } from './schemas.js';
import { listExchangeRates } from './service.js';

const tags = ['Exchange Rates'];

export const exchangeRatesRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { store, clock } = app.deps;

  app.get(
    '/exchange-rates',
    {
      config: { auth: 'basic' },
      schema: {
        tags,
        operationId: 'getExchangeRates',
        summary: 'Get exchange rates',
        description:
          'Cached sandbox FX rates per corridor (about 5 minutes of the platform clock), with the platform\'s cross-currency fee for a USD source. ' +
          'receivingAmount is what sendingAmount delivers after fees.',
        querystring: ExchangeRateQuery,
        response: { 200: ExchangeRateListResponse, ...errorResponses() },
      },
    },
    async (req) => listExchangeRates(store.db, authOf(req).platform, nowOf(req, clock).ms, req.query),
  );
};
