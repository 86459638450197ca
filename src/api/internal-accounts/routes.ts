import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { authOf, errorResponses } from '../../kernel/http.js';
import { CustomerInternalAccountQuery, InternalAccountListResponse, PlatformInternalAccountListResponse, PlatformInternalAccountQuery } from './schemas.js';
import { listCustomerAccounts, listPlatformAccounts } from './service.js';

const tags = ['Internal Accounts'];

export const internalAccountsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { store } = app.deps;

  app.get(
    '/customers/internal-accounts',
    {
      config: { auth: 'basic' },
      schema: {
        tags,
        operationId: 'listCustomerInternalAccounts',
        summary: 'List customer internal accounts',
        description: 'Customers’ internal accounts, newest first; opened automatically for each of a customer’s currencies (on an unregulated platform once the customer’s end-user terms consent is on file).',
        querystring: CustomerInternalAccountQuery,
        response: { 200: InternalAccountListResponse, ...errorResponses() },
      },
    },
    async (req) => {
      const q = req.query;
      return listCustomerAccounts(store.db, authOf(req).platform.id, { customerId: q.customerId, currency: q.currency, type: q.type }, { limit: q.limit, cursor: q.cursor });
    },
  );

  app.get(
    '/platform/internal-accounts',
    {
      config: { auth: 'basic' },
      schema: {
        tags,
        operationId: 'listPlatformInternalAccounts',
        summary: 'List platform internal accounts',
        description: 'The platform’s own internal accounts, one per supported currency.',
        querystring: PlatformInternalAccountQuery,
        response: { 200: PlatformInternalAccountListResponse, ...errorResponses() },
      },
    },
    async (req) => listPlatformAccounts(store.db, authOf(req).platform.id, { currency: req.query.currency, type: req.query.type }),
  );
};
