import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { authOf, errorResponses } from '../../kernel/http.js';
import { OutgoingTransaction, TransactionListQuery, TransactionListResponse, TransactionParams } from './schemas.js';
import { getTransaction, listTransactions } from './service.js';

const tags = ['Transactions'];

export const transactionsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { store } = app.deps;

  app.get(
    '/transactions',
    {
      config: { auth: 'basic' },
      schema: {
        tags,
        operationId: 'listTransactions',
        summary: 'List transactions',
        description: 'The platform’s transactions, newest first, with cursor pagination.',
        querystring: TransactionListQuery,
        response: { 200: TransactionListResponse, ...errorResponses() },
      },
    },
    async (req) => listTransactions(store.db, authOf(req).platform.id, req.query),
  );

  app.get(
    '/transactions/:transactionId',
    {
      config: { auth: 'basic' },
      schema: { tags, operationId: 'getTransactionById', summary: 'Get a transaction', params: TransactionParams, response: { 200: OutgoingTransaction, ...errorResponses(404) } },
    },
    async (req) => getTransaction(store.db, authOf(req).platform.id, req.params.transactionId),
  );
};
