import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { timeRangeOf } from '../../kernel/pagination.js';
import { authOf, errorResponses, nowOf } from '../../kernel/http.js';
import { checkSchema } from '../../kernel/validation.js';
import { Customer, CustomerCreateRequest, CustomerIdParams, CustomerListQuery, CustomerListResponse, CustomerUpdateRequest, EndUserTerms } from './schemas.js';
import { createCustomer, currentEndUserTermsVersion, deleteCustomer, getCustomer, listCustomers, rejectCreateBody, rejectUpdateBody, updateCustomer } from './service.js';

const tags = ['Customers'];

/** The published end-user terms: a page this server serves, per version. */
export function endUserTermsUrl(origin: string, version: string): string {
  return `${origin}/legal/end-user-terms/${encodeURIComponent(version)}`;
}

export const customersRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { store, clock, hooks } = app.deps;
  const deps = { store, hooks };

  app.post(
    '/customers',
    {
      // A body its schema refuses is answered here, with the service's own checks in the same 400.
      preValidation: async (req) => {
        const errors = checkSchema(CustomerCreateRequest, req.body ?? null);
        if (errors.length > 0) await rejectCreateBody(deps, authOf(req).platform, req.body, errors);
      },
      schema: { tags, operationId: 'createCustomer', summary: 'Create a customer', body: CustomerCreateRequest, response: { 201: Customer, ...errorResponses(409) } },
    },
    async (req, reply) => reply.code(201).send(await createCustomer(deps, authOf(req).platform, nowOf(req, clock).at, req.body)),
  );

  app.get(
    '/customers',
    { schema: { tags, operationId: 'listCustomers', summary: 'List customers', querystring: CustomerListQuery, response: { 200: CustomerListResponse, ...errorResponses() } } },
    async (req) => {
      const q = req.query;
      return listCustomers(
        store.db,
        authOf(req).platform.id,
        {
          platformCustomerId: q.platformCustomerId, customerType: q.customerType, region: q.region, currency: q.currency, umaAddress: q.umaAddress,
          isIncludingDeleted: q.isIncludingDeleted, ...timeRangeOf(q),
        },
        { limit: q.limit, cursor: q.cursor },
      );
    },
  );

  app.get(
    '/customers/end-user-terms',
    { schema: { tags, operationId: 'getEndUserTerms', summary: 'Current end-user terms', response: { 200: EndUserTerms, ...errorResponses() } } },
    async (req) => {
      const version = currentEndUserTermsVersion();
      return { version, url: endUserTermsUrl(`${req.protocol}://${req.host}`, version) };
    },
  );

  app.get(
    '/customers/:customerId',
    { schema: { tags, operationId: 'getCustomerById', summary: 'Get a customer', params: CustomerIdParams, response: { 200: Customer, ...errorResponses(404) } } },
    async (req) => getCustomer(store.db, authOf(req).platform.id, req.params.customerId),
  );

  app.patch(
    '/customers/:customerId',
    {
      preValidation: async (req) => {
        const errors = checkSchema(CustomerUpdateRequest, req.body ?? null);
        if (errors.length > 0) await rejectUpdateBody(deps, authOf(req).platform, (req.params as { customerId: string }).customerId, req.body, errors);
      },
      schema: { tags, operationId: 'updateCustomerById', summary: 'Update a customer', params: CustomerIdParams, body: CustomerUpdateRequest, response: { 200: Customer, ...errorResponses(404, 409, 424) } },
    },
    async (req) => updateCustomer(deps, authOf(req).platform, nowOf(req, clock).at, req.params.customerId, req.body),
  );

  app.delete(
    '/customers/:customerId',
    { schema: { tags, operationId: 'deleteCustomerById', summary: 'Delete a customer', params: CustomerIdParams, response: { 200: Customer, ...errorResponses(404, 410) } } },
    async (req) => deleteCustomer(store.db, authOf(req).platform.id, nowOf(req, clock).at, req.params.customerId),
  );
};
