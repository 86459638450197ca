import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifySchemaCompiler } from 'fastify';
import { authOf, errorResponses, nowOf } from '../../kernel/http.js';
import { validatorCompiler } from '../../kernel/validation.js';
import { CustomerIdParams } from '../customers/schemas.js';
import { KycLinkCreateRequest, KycLinkResponse } from './schemas.js';
import { createKycLink } from './service.js';


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
        response: { 201: KycLinkResponse, ...errorResponses(404, 409, 410) },
      },
    },
    async (req, reply) =>
      reply.code(201).send(await createKycLink(deps, authOf(req).platform, nowOf(req, clock), req.params.customerId, req.body, `${req.protocol}://${req.host}`)),
  );
};
