import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { authOf, errorResponses, NoContent, nowOf } from '../../kernel/http.js';
import { Customer, CustomerIdParams } from './shapes.js';
import { ContactVerificationConfirmRequest } from './schemas.js';
import { type Channel, confirmContactCode, sendContactCode } from './service.js';

const tags = ['Contact Verification'];

const TEXT: Record<Channel, { noun: string; op: string; via: string }> = {
  email: { noun: 'email', op: 'Email', via: 'by email' },
  phone: { noun: 'phone', op: 'Phone', via: 'by SMS' },
};

export const contactVerificationRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { store, clock } = app.deps;
  const deps = { store };

  for (const channel of ['email', 'phone'] as const) {
    const { noun, op, via } = TEXT[channel];
    app.post(
      `/customers/:customerId/verify-${noun}`,
      {
        config: { auth: 'basic' },
        schema: {
          tags,
                    operationId: `sendCustomer${op}Verification`,
          summary: `Send a ${noun} verification code to a customer`,
          description:
            `Send (or resend) a one-time code ${via} to begin ${noun} verification. Only for customers whose provider requires contact ` +
            `verification (they carry \`contactVerification\`); otherwise 409, as when the ${noun} is already verified or absent. ` +
            'In the sandbox nothing is sent and the code is always `123456`.',
          params: CustomerIdParams,
          response: { 204: NoContent, ...errorResponses(404, 409) },
        },
      },
      async (req, reply) => {
        await sendContactCode(deps, authOf(req).platform.id, req.params.customerId, channel);
        return reply.code(204).send(null);
      },
    );

    app.post(
      `/customers/:customerId/verify-${noun}/confirm`,
      {
        config: { auth: 'basic' },
        schema: {
          tags,
                    operationId: `confirmCustomer${op}Verification`,
          summary: `Confirm a customer's ${noun} verification code`,
          description: `Submit the code the customer received; \`contactVerification.${channel}\` becomes \`VERIFIED\`. In the sandbox the code is always \`123456\`.`,
          params: CustomerIdParams,
          body: ContactVerificationConfirmRequest,
          response: { 200: Customer, ...errorResponses(404, 409) },
        },
      },
      async (req) => confirmContactCode(deps, authOf(req).platform.id, nowOf(req, clock).at, req.params.customerId, channel, req.body.code),
    );
  }
};
