import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { authOf, errorResponses, nowOf } from '../../kernel/http.js';
import {
  CancelTransactionRequest,
  ConfirmReceiptDeliveryRequest,
  TransactionListQuery,
  TransactionListResponse,
  TransactionOneOf,
  TransactionParams,
} from './schemas.js';
import { cancelTransaction, confirmReceiptDelivery, getTransaction, listTransactions } from './service.js';

const tags = ['Transactions'];

/** An optional JSON body: none reads as {}. */
const optionalBody = async (req: { body: unknown }) => {
  if (req.body === undefined || req.body === null) req.body = {};
};

export const transactionsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { store, clock, jobs } = app.deps;
  const deps = { store, jobs };

  app.get(
    '/transactions',
    {
      config: { auth: 'basic' },
      schema: {
        tags,
        operationId: 'listTransactions',
        summary: 'List transactions',
        description:
          'The platform’s transactions (incoming and outgoing), newest first, with cursor pagination. type=CARD lists its card transactions instead (cardholder, funding account, status and time filters apply).',
        querystring: TransactionListQuery,
        response: { 200: TransactionListResponse, ...errorResponses() },
      },
    },
    async (req) => listTransactions(store.db, authOf(req).platform.id, req.query, nowOf(req, clock).ms),
  );

  app.get(
    '/transactions/:transactionId',
    {
      config: { auth: 'basic' },
      schema: {
        tags,
        operationId: 'getTransactionById',
        summary: 'Get a transaction',
        description: 'A payment, or a card transaction of the platform by its CardTransaction id (type CARD).',
        params: TransactionParams,
        response: { 200: TransactionOneOf, ...errorResponses(404) },
      },
    },
    async (req) => getTransaction(store.db, authOf(req).platform.id, req.params.transactionId, nowOf(req, clock).ms),
  );

  app.post(
    '/transactions/:transactionId/confirm',
    {
      config: { auth: 'basic', permission: 'TRANSACT' },
      preValidation: optionalBody,
      schema: {
        tags,
        operationId: 'confirmReceiptDelivery',
        summary: 'Confirm receipt delivery',
        description: 'Records when the platform delivered the transaction receipt to its customer (default now); calling it again moves the time.',
        params: TransactionParams,
        body: ConfirmReceiptDeliveryRequest,
        response: { 200: TransactionOneOf, ...errorResponses(404) },
      },
    },
    async (req) => confirmReceiptDelivery(store.db, authOf(req).platform.id, req.params.transactionId, nowOf(req, clock), req.body.receiptDeliveryConfirmedAt),
  );

  app.post(
    '/transactions/:transactionId/cancel',
    {
      config: { auth: 'basic', permission: 'TRANSACT' },
      preValidation: optionalBody,
      schema: {
        tags,
        operationId: 'cancelTransaction',
        summary: 'Cancel a bank transfer',
        description:
          'Cancels a bank-rail transfer (ACH, wire, SEPA …) that has not settled yet: it fails and its money goes back at once (refund reason USER_CANCELLATION). Anything settled, failed, or not on a bank rail: 409 TRANSACTION_NOT_CANCELLABLE.',
        params: TransactionParams,
        body: CancelTransactionRequest,
        response: { 200: TransactionOneOf, ...errorResponses(404, 409) },
      },
    },
    async (req) => cancelTransaction(deps, authOf(req).platform.id, req.params.transactionId, nowOf(req, clock)),
  );
};
