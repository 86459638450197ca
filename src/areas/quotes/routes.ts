import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { authOf, errorResponses, nowOf } from '../../kernel/http.js';
import { ExecuteQuoteRequest, Quote, QuoteParams, QuoteRequest } from './schemas.js';
import { createQuote, executeQuote, getQuote } from './service.js';

const tags = ['Cross-Currency Transfers'];

export const quotesRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { store, clock, jobs } = app.deps;
  const deps = { store, jobs };

  app.post(
    '/quotes',
    {
      config: { auth: 'basic', permission: 'TRANSACT' },
      schema: {
        tags,
        operationId: 'createQuote',
        summary: 'Create a transfer quote',
        description:
          'Prices a transfer from an internal account to an external account at the platform’s cached rate and fee (the lookup’s), executable for 5 minutes of platform time. With `immediatelyExecute` the quote is executed in the same request.',
        body: QuoteRequest,
        response: { 201: Quote, ...errorResponses(403, 404, 409, 410) },
      },
    },
    async (req, reply) => {
      const quote = await createQuote(deps, authOf(req).platform, nowOf(req, clock), req.body);
      return reply.code(201).send(quote);
    },
  );

  app.get(
    '/quotes/:quoteId',
    {
      config: { auth: 'basic' },
      schema: { tags, operationId: 'getQuoteById', summary: 'Get a quote', params: QuoteParams, response: { 200: Quote, ...errorResponses(404) } },
    },
    async (req) => getQuote(store.db, authOf(req).platform.id, req.params.quoteId, nowOf(req, clock).ms),
  );

  app.post(
    '/quotes/:quoteId/execute',
    {
      config: { auth: 'basic', permission: 'TRANSACT' },
      // The body is optional (the reference's ExecuteQuoteRequest): no body reads as {}.
      preValidation: async (req) => {
        if (req.body === undefined || req.body === null) req.body = {};
      },
      schema: {
        tags,
        operationId: 'executeQuote',
        summary: 'Execute a quote',
        description: 'Holds the sending total on the source account and starts the OUTGOING transaction; no body. Honours Idempotency-Key.',
        params: QuoteParams,
        body: ExecuteQuoteRequest,
        response: { 200: Quote, ...errorResponses(403, 404, 409, 410) },
      },
    },
    async (req) => executeQuote(deps, authOf(req).platform, nowOf(req, clock), req.params.quoteId),
  );
};
