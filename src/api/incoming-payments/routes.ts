import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { authOf, errorResponses, nowOf } from '../../kernel/http.js';
import { ApprovePaymentRequest, IncomingTransaction, RejectPaymentRequest, TransactionOneOf, TransactionParams } from './shapes.js';
import { SandboxUmaReceiveRequest } from './schemas.js';
import { approvePendingPayment, receiveUmaPayment, rejectPendingPayment, throwReceiveFieldErrors } from './service.js';

/** An optional JSON body: none reads as {}. */
const optionalBody = async (req: { body: unknown }) => {
  if (req.body === undefined || req.body === null) req.body = {};
};

export const incomingPaymentsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { store, clock, jobs } = app.deps;
  const deps = { store, clock, jobs };

  app.post(
    '/sandbox/uma/receive',
    {
      config: { auth: 'basic', permission: 'TRANSACT' },
      // Every field problem, the schema's and the service's own checks, in one 400.
      preValidation: async (req) => throwReceiveFieldErrors(req.body),
      schema: {
        tags: ['Sandbox'],
        operationId: 'sandboxReceive',
        summary: 'Simulate payment send to test receiving an UMA payment',
        description:
          'A sandbox sender (`$success.<currency>@sandbox.uma.money` or `@sandbox.grid.uma.money`, …) pays a customer of the platform. The payment arrives PENDING in the ' +
          'customer\'s internal account in that currency (totalBalance) and INCOMING_PAYMENT.PENDING asks the platform to approve it; ' +
          'without a webhook endpoint it is approved at once. Permission TRANSACT.',
        body: SandboxUmaReceiveRequest,
        response: { 200: IncomingTransaction, ...errorResponses(403, 404) },
      },
    },
    async (req) => receiveUmaPayment(deps, authOf(req).platform, nowOf(req, clock), req.body),
  );

  app.post(
    '/transactions/:transactionId/approve',
    {
      config: { auth: 'basic', permission: 'TRANSACT' },
      preValidation: optionalBody,
      schema: {
        tags: ['Transactions'],
        operationId: 'approvePendingPayment',
        summary: 'Approve a pending incoming payment',
        description:
          'Approves a payment pending platform approval (typically after answering its INCOMING_PAYMENT.PENDING webhook with 202), within 5 seconds ' +
          'of sandbox time. `receiverCustomerInfo` must carry the mandatory `requestedReceiverCustomerInfoFields` (else 400). Not pending approval ' +
          '(decided, timed out, never asked): 409 TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL. Also approves an agent-initiated transaction pending approval ' +
          '(docs/agents.md): it executes under the agent’s current policy, as POST /agents/{agentId}/actions/{actionId}/approve.',
        params: TransactionParams,
        body: ApprovePaymentRequest,
        response: { 200: TransactionOneOf, ...errorResponses(404, 409) },
      },
    },
    async (req) => approvePendingPayment(deps, authOf(req).platform.id, req.params.transactionId, req.body.receiverCustomerInfo, nowOf(req, clock), authOf(req).tokenId),
  );

  app.post(
    '/transactions/:transactionId/reject',
    {
      config: { auth: 'basic', permission: 'TRANSACT' },
      preValidation: optionalBody,
      schema: {
        tags: ['Transactions'],
        operationId: 'rejectPendingPayment',
        summary: 'Reject a pending incoming payment',
        description:
          'Rejects a payment pending platform approval: REJECTED (failureReason COMPLIANCE_REJECTED) and refunded to the sender. Not pending ' +
          'approval: 409 TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL. An agent-initiated transaction pending approval ends without moving anything (its action REJECTED).',
        params: TransactionParams,
        body: RejectPaymentRequest,
        response: { 200: TransactionOneOf, ...errorResponses(404, 409) },
      },
    },
    async (req) => rejectPendingPayment(deps, authOf(req).platform.id, req.params.transactionId, req.body.reason, nowOf(req, clock), authOf(req).tokenId),
  );
};
