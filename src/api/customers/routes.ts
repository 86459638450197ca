import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { timeRangeOf } from '../../kernel/pagination.js';
import { authOf, errorResponses, nowOf } from '../../kernel/http.js';
import { checkSchema } from '../../kernel/validation.js';
import { Customer, CustomerCreateRequest, CustomerIdParams, CustomerListQuery, CustomerListResponse, CustomerUpdateRequest, EndUserTerms } from './schemas.js';
import { createCustomer, currentEndUserTermsVersion, deleteCustomer, getCustomer, listCustomers, rejectCreateBody, rejectUpdateBody, updateCustomer } from './service.js';

const tags = ['Customers'];

/** The JSON text of frozen customer views (GET /customers/{id}), made once per view. */
const answerTexts = new WeakMap<object, string>();
/** What Fastify's serialized JSON answers carry. */
const JSON_UTF8 = 'application/json; charset=utf-8';

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
    async (req, reply) => {
      const view = await getCustomer(store.db, authOf(req).platform.id, req.params.customerId);
      // A frozen view is shared (one per cached row: getCustomer): its answer's JSON is made
      // once, by this route's serializer, and sent as that text with the content type the
      // serializer's answer has (issue 35).
      if (!Object.isFrozen(view)) return view;
      let text = answerTexts.get(view);
      if (text === undefined) answerTexts.set(view, (text = reply.serialize(view) as string));
      return reply.type(JSON_UTF8).send(text as never); // the answer already serialized
    },
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
