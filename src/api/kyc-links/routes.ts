import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifySchemaCompiler } from 'fastify';
import { authOf, errorResponses, nowOf } from '../../kernel/http.js';
import { validatorCompiler } from '../../kernel/validation.js';
import { CustomerIdParams } from './shapes.js';
import { KycLinkByPlatformCustomerIdQuery, KycLinkByPlatformCustomerIdResponse, KycLinkCreateRequest, KycLinkResponse } from './schemas.js';
import { createKycLink, kycLinkForPlatformCustomerId } from './service.js';


/** The body is optional (requestBody.required false): no body is valid, a body is checked as usual. */
const optionalBodyValidator: FastifySchemaCompiler<unknown> = (route) => {
  const validate = validatorCompiler(route);
  return route.httpPart === 'body' ? (data: unknown) => (data === undefined || data === null ? { value: undefined } : validate(data)) : validate;
};

export const kycLinkRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { store, clock, hooks } = app.deps;
  const deps = { store, clock, hooks };

  app.post(
    '/customers/:customerId/kyc-link',
    {
      config: { auth: 'basic' },
      validatorCompiler: optionalBodyValidator,
      schema: {
        tags: ['KYC/KYB Verifications'],
                operationId: 'createCustomerKycLink',
        summary: 'Generate a hosted KYC/KYB link for an existing customer',
        description:
          'A single-use hosted page on this server (`kycUrl`) where the customer completes their data, uploads a document and submits ' +
          'the verification. The link expires at `expiresAt`; generating it does not change the customer’s status. Customers whose provider ' +
          'requires contact verification must have every channel on file `VERIFIED` first (409 otherwise). The body is optional.',
        params: CustomerIdParams,
        body: KycLinkCreateRequest,
        response: { 201: KycLinkResponse, ...errorResponses(404, 409) },
      },
    },
    async (req, reply) =>
      reply.code(201).send(await createKycLink(deps, authOf(req).platform, nowOf(req, clock), req.params.customerId, req.body, `${req.protocol}://${req.host}`)),
  );

  app.get(
    '/customers/kyc-link',
    {
      // It may create the customer and always mints a link: a write, so MANAGE as the POST.
      config: { auth: 'basic', permission: 'MANAGE', extension: true },
      schema: {
        tags: ['KYC/KYB Verifications'],
        operationId: 'getCustomerKycLink',
        summary: 'Generate a hosted KYC link for a customer by your platformCustomerId',
        description:
          'The official client\u2019s getKYCLink. A single-use hosted page on this server (`kycUrl`, the same page and expiry as ' +
          '`POST /customers/{customerId}/kyc-link`) for the live customer with this `platformCustomerId`; when the platform has none, an ' +
          'INDIVIDUAL customer with that id is created first (UNVERIFIED, emitting what any create emits). Contact verification ' +
          'must be complete first (409).',
        querystring: KycLinkByPlatformCustomerIdQuery,
        response: { 200: KycLinkByPlatformCustomerIdResponse, ...errorResponses(409) },
      },
    },
    async (req) => kycLinkForPlatformCustomerId(deps, authOf(req).platform, nowOf(req, clock), req.query, `${req.protocol}://${req.host}`),
  );
};
