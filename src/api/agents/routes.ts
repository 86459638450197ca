import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { iso, platformNowMs } from '../../kernel/clock.js';
import { authOf, errorResponses, jsonSerializer, lazyBody, NoContent, nowOf, requestIdHeader, signedHeadersOf } from '../../kernel/http.js';
import { PageQuery, SortOrderQuery } from '../../kernel/pagination.js';
import { SignedHeaders, SignedRequestChallenge, ExternalAccount, ExternalAccountCreateRequest, ExternalAccountIdParams, ExternalAccountListResponse, InternalAccountListResponse, InternalAccountType, Quote, QuoteRequest, TransferInRequest, TransferOutRequest, TransactionListResponse, TransactionOneOf, TransactionParams, TransactionStatus, TransactionType } from './shapes.js';
import {
  ActionIdParams,
  Agent,
  AgentAction,
  AgentActionListResponse,
  AgentActionParams,
  AgentActionRejectRequest,
  AgentActionsQuery,
  AgentApprovalsQuery,
  AgentAuditListResponse,
  AgentAuditQuery,
  AgentCreateRequest,
  AgentCreateResponse,
  AgentDeviceCode,
  AgentDeviceCodeRedeemResponse,
  AgentDeviceCodeStatusResponse,
  AgentIdParams,
  AgentListQuery,
  AgentListResponse,
  AgentPolicyUpdateRequest,
  AgentUpdateRequest,
  DeviceCodeParams,
} from './schemas.js';
import { decideAction, listApprovals, listAudit } from './approvals.js';
import { createAgent, deleteAgent, deviceCodeStatus, getAgent, listAgents, patchAgent, patchPolicy, redeemDeviceCode, regenerateDeviceCode } from './management.js';
import { checkAgentExternalAccountBody, createAgentExternalAccount, deleteMyExternalAccount, getMe, getMyAction, getMyExternalAccount, getMyTransaction, listMyActions, listMyExternalAccounts, listMyInternalAccounts, listMyTransactions } from './operations.js';
import { createMyQuote, createMyTransfer, executeMyQuote, getMyQuote } from './payments.js';

// Agent Management (BasicAuth, the platform) and Agent Operations (AgentAuth, the agent
// itself, bound to its customer and its policy). docs/agents.md.

const management = ['Agent Management'];
const operations = ['Agent Operations'];

/** An optional JSON body: none reads as {}. */
const optionalBody = async (req: { body: unknown }) => {
  if (req.body === undefined || req.body === null) req.body = {};
};

const AgentTransactionQuery = Type.Object({
  accountIdentifier: Type.Optional(Type.String({ description: 'Sender or receiver account identifier' })),
  senderAccountIdentifier: Type.Optional(Type.String()),
  receiverAccountIdentifier: Type.Optional(Type.String()),
  status: Type.Optional(TransactionStatus),
  type: Type.Optional(TransactionType),
  reference: Type.Optional(Type.String()),
  startDate: Type.Optional(Type.String({ format: 'date-time', description: 'Created at or after (inclusive)' })),
  endDate: Type.Optional(Type.String({ format: 'date-time', description: 'Created at or before (inclusive)' })),
  ...PageQuery,
  sortOrder: SortOrderQuery,
});

const AgentInternalAccountQuery = Type.Object({
  currency: Type.Optional(Type.String()),
  type: Type.Optional(InternalAccountType),
  ...PageQuery,
});

const AgentExternalAccountQuery = Type.Object({ currency: Type.Optional(Type.String()), ...PageQuery });
const QuoteIdParams = Type.Object({ quoteId: Type.String() });

export const agentsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { store, clock, jobs } = app.deps;
  const deps = { store, clock, jobs };

  // ---- Agent Management (BasicAuth) ---------------------------------------------------------

  app.post(
    '/agents',
    {
      config: { auth: 'basic', permission: 'MANAGE' },
      schema: {
        tags: management,
        operationId: 'createAgent',
        summary: 'Create an agent',
        description: 'Creates an agent for a customer with its policy, and its first device code (redeemable for 24 hours of sandbox time).',
        body: AgentCreateRequest,
        response: { 201: AgentCreateResponse, ...errorResponses() },
      },
    },
    async (req, reply) => reply.code(201).send(await createAgent(store, authOf(req).platform, nowOf(req, clock), req.body)),
  );

  app.get(
    '/agents',
    {
      config: { auth: 'basic' },
      schema: { tags: management, operationId: 'listAgents', summary: 'List agents', querystring: AgentListQuery, response: { 200: AgentListResponse, ...errorResponses() } },
    },
    async (req) => listAgents(store.db, authOf(req).platform.id, req.query, nowOf(req, clock).ms),
  );

  app.get(
    '/agents/approvals',
    {
      config: { auth: 'basic' },
      schema: {
        tags: management,
        operationId: 'listAgentApprovals',
        summary: 'List agent actions pending approval',
        description: 'The agents’ actions waiting for the platform’s decision (PENDING_APPROVAL), newest first.',
        querystring: AgentApprovalsQuery,
        response: { 200: AgentActionListResponse, ...errorResponses() },
      },
    },
    async (req) => listApprovals(store.db, authOf(req).platform.id, req.query, nowOf(req, clock).ms),
  );

  app.get(
    '/agents/:agentId',
    {
      config: { auth: 'basic' },
      schema: { tags: management, operationId: 'getAgentById', summary: 'Get an agent', params: AgentIdParams, response: { 200: Agent, ...errorResponses(404) } },
    },
    async (req) => getAgent(store.db, authOf(req).platform.id, req.params.agentId, nowOf(req, clock).ms),
  );

  app.patch(
    '/agents/:agentId',
    {
      config: { auth: 'basic', permission: 'MANAGE' },
      schema: {
        tags: management,
        operationId: 'updateAgent',
        summary: 'Update an agent',
        description: 'Renames, pauses (isPaused true: every agent operation but GET /agents/me answers 403 from the next request) or resumes the agent.',
        params: AgentIdParams,
        body: AgentUpdateRequest,
        response: { 200: Agent, ...errorResponses(404) },
      },
    },
    async (req) => patchAgent(store, authOf(req).platform.id, req.params.agentId, nowOf(req, clock), req.body),
  );

  app.delete(
    '/agents/:agentId',
    {
      config: { auth: 'basic', permission: 'MANAGE' },
      schema: {
        tags: management,
        operationId: 'deleteAgent',
        summary: 'Delete an agent',
        description: 'Its access token stops working at once (401); its pending actions fail when approved.',
        params: AgentIdParams,
        response: { 204: NoContent, ...errorResponses(404) },
      },
    },
    async (req, reply) => {
      await deleteAgent(store, authOf(req).platform.id, req.params.agentId, nowOf(req, clock));
      return reply.code(204).send(null);
    },
  );

  app.patch(
    '/agents/:agentId/policy',
    {
      config: { auth: 'basic', permission: 'MANAGE' },
      schema: {
        tags: management,
        operationId: 'updateAgentPolicy',
        summary: 'Update an agent’s policy',
        description: 'Fields given replace the current ones (spendingLimits field by field); effective from the agent’s next request, and for pending actions when they are approved.',
        params: AgentIdParams,
        body: AgentPolicyUpdateRequest,
        response: { 200: Agent, ...errorResponses(404) },
      },
    },
    async (req) => patchPolicy(store, authOf(req).platform.id, req.params.agentId, nowOf(req, clock), req.body),
  );

  app.post(
    '/agents/:agentId/device-codes',
    {
      config: { auth: 'basic', permission: 'MANAGE' },
      schema: {
        tags: management,
        operationId: 'regenerateAgentDeviceCode',
        summary: 'Issue a new device code',
        description: 'A new code (24 hours); earlier unredeemed codes of the agent stop working. An agent already connected: 409.',
        params: AgentIdParams,
        response: { 201: AgentDeviceCode, ...errorResponses(404, 409) },
      },
    },
    async (req, reply) => reply.code(201).send(await regenerateDeviceCode(store, authOf(req).platform.id, req.params.agentId, nowOf(req, clock))),
  );

  app.get(
    '/agents/:agentId/audit',
    {
      config: { auth: 'basic', extension: true },
      schema: {
        tags: management,
        operationId: 'listAgentAudit',
        summary: 'An agent’s audit trail',
        description: 'Every policy evaluation of the agent’s requests (denials included) and every decision on its actions, with reason, actor and transaction; newest first.',
        params: AgentIdParams,
        querystring: AgentAuditQuery,
        response: { 200: AgentAuditListResponse, ...errorResponses(404) },
      },
    },
    async (req) => listAudit(store.db, authOf(req).platform.id, req.params.agentId, req.query),
  );

  for (const verb of ['approve', 'reject'] as const) {
    app.post(
      `/agents/:agentId/actions/:actionId/${verb}`,
      {
        config: { auth: 'basic', permission: 'TRANSACT' },
        preValidation: optionalBody,
        schema: {
          tags: management,
          operationId: verb === 'approve' ? 'approveAgentAction' : 'rejectAgentAction',
          summary: verb === 'approve' ? 'Approve an agent action' : 'Reject an agent action',
          description:
            verb === 'approve'
              ? 'Executes the pending action under the agent’s current policy: APPROVED with its transaction, or FAILED (policy now refuses it, execution refused). After its deadline, or decided already: 409.'
              : 'Rejects the pending action: REJECTED, its transaction ends without moving anything. Decided already or expired: 409.',
          params: AgentActionParams,
          ...(verb === 'reject' ? { body: AgentActionRejectRequest } : {}),
          response: { 200: AgentAction, ...errorResponses(404, 409) },
        },
      },
      async (req) => {
        const auth = authOf(req);
        const reason = verb === 'reject' ? (req.body as { reason?: string }).reason : undefined;
        return decideAction(deps, auth.platform.id, req.params.agentId, req.params.actionId, { approve: verb === 'approve', reason }, nowOf(req, clock), auth.tokenId);
      },
    );
  }

  app.get(
    '/agents/device-codes/:code/status',
    {
      config: { auth: 'basic' },
      schema: {
        tags: management,
        operationId: 'getAgentDeviceCodeStatus',
        summary: 'Device code status',
        description: 'PENDING (redeemable), REDEEMED, or EXPIRED (past its expiry on the sandbox clock, or replaced by a newer code).',
        params: DeviceCodeParams,
        response: { 200: AgentDeviceCodeStatusResponse, ...errorResponses(404) },
      },
    },
    async (req) => deviceCodeStatus(store.db, authOf(req).platform.id, req.params.code, nowOf(req, clock).ms),
  );

  app.post(
    '/agents/device-codes/:code/redeem',
    {
      config: { auth: 'none', secretFields: ['accessToken'] },
      schema: {
        tags: management,
        operationId: 'redeemAgentDeviceCode',
        summary: 'Redeem a device code',
        description: 'Called by the agent software, without credentials: returns the access token once. Redeemed, expired or replaced: 400.',
        params: DeviceCodeParams,
        response: { 200: AgentDeviceCodeRedeemResponse, ...errorResponses(404) },
      },
    },
    async (req) => redeemDeviceCode(store, clock, req.params.code),
  );

  // ---- Agent Operations (AgentAuth) --------------------------------------------------------

  app.get(
    '/agents/me',
    {
      config: { auth: 'agent' },
      schema: { tags: operations, operationId: 'getAgentMe', summary: 'The calling agent', description: 'Its profile, policy and usage (also while paused).', response: { 200: Agent, ...errorResponses() } },
    },
    async (req) => getMe(store.db, authOf(req), nowOf(req, clock).ms),
  );

  app.get(
    '/agents/me/transactions',
    {
      config: { auth: 'agent' },
      schema: {
        tags: operations,
        operationId: 'agentListTransactions',
        summary: 'The customer’s transactions',
        description: 'VIEW_TRANSACTIONS. Only the agent’s customer’s transactions.',
        querystring: AgentTransactionQuery,
        response: { 200: TransactionListResponse, ...errorResponses() },
      },
    },
    async (req) => listMyTransactions(store.db, authOf(req), req.query, nowOf(req, clock).ms),
  );

  app.get(
    '/agents/me/transactions/:transactionId',
    {
      config: { auth: 'agent' },
      schema: {
        tags: operations,
        operationId: 'agentGetTransaction',
        summary: 'A transaction of the customer',
        description: 'VIEW_TRANSACTIONS. Another customer’s transaction: 404.',
        params: TransactionParams,
        response: { 200: TransactionOneOf, ...errorResponses(404) },
      },
    },
    async (req) => getMyTransaction(store.db, authOf(req), req.params.transactionId, nowOf(req, clock).ms),
  );

  app.post(
    '/agents/me/quotes',
    {
      config: { auth: 'agent', permission: 'TRANSACT' },
      schema: {
        tags: operations,
        operationId: 'agentCreateQuote',
        summary: 'Create a quote',
        description: 'CREATE_QUOTES. Every account named must be the customer’s (else 404); the source account must be allowed by accountRestrictions. Never executed at once: execute it with /agents/me/quotes/{quoteId}/execute.',
        body: QuoteRequest,
        response: { 201: Quote, ...errorResponses(403, 412, 424) },
      },
    },
    async (req, reply) => reply.code(201).send(await createMyQuote(deps, authOf(req), nowOf(req, clock), req.body)),
  );

  app.get(
    '/agents/me/quotes/:quoteId',
    {
      config: { auth: 'agent' },
      schema: { tags: operations, operationId: 'agentGetQuote', summary: 'A quote the agent created', params: QuoteIdParams, response: { 200: Quote, ...errorResponses(404) } },
    },
    async (req) => getMyQuote(store.db, authOf(req), req.params.quoteId, nowOf(req, clock).ms),
  );

  app.post(
    '/agents/me/quotes/:quoteId/execute',
    {
      config: { auth: 'agent', permission: 'TRANSACT' },
      schema: {
        tags: operations,
        operationId: 'agentExecuteQuote',
        summary: 'Execute a quote',
        description:
          'EXECUTE_QUOTES and the spending limits; then executed (APPROVED, with its transaction) or PENDING_APPROVAL (execution mode, approval threshold). Denied: 403 FORBIDDEN with details.reason. From an EMBEDDED_WALLET source the policy’s decision takes effect only with the wallet’s stamp over the quote’s payloadToSign in Service-Wallet-Signature (without one: 202 with the payload and a requestId; the signed retry carries the stamp and the Request-Id), as on POST /quotes/{quoteId}/execute.',
        params: QuoteIdParams,
        headers: SignedHeaders,
        response: { 200: AgentAction, 202: SignedRequestChallenge, ...errorResponses(403, 404, 409, 429) },
      },
    },
    async (req, reply) => {
      const r = await executeMyQuote(deps, authOf(req), nowOf(req, clock), req.params.quoteId, signedHeadersOf(req));
      if ('challenge' in r) requestIdHeader(reply, r.challenge);
      return 'challenge' in r ? reply.code(202).send(r.challenge) : reply.code(200).send(r.action);
    },
  );

  app.get(
    '/agents/me/actions',
    {
      config: { auth: 'agent' },
      schema: { tags: operations, operationId: 'agentListActions', summary: 'The agent’s actions', querystring: AgentActionsQuery, response: { 200: AgentActionListResponse, ...errorResponses() } },
    },
    async (req) => listMyActions(store.db, authOf(req), req.query, nowOf(req, clock).ms),
  );

  app.get(
    '/agents/me/actions/:actionId',
    {
      config: { auth: 'agent' },
      schema: { tags: operations, operationId: 'agentGetAction', summary: 'One of the agent’s actions', params: ActionIdParams, response: { 200: AgentAction, ...errorResponses(404) } },
    },
    async (req) => getMyAction(store.db, authOf(req), req.params.actionId, nowOf(req, clock).ms),
  );

  for (const direction of ['IN', 'OUT'] as const) {
    app.post(
      direction === 'IN' ? '/agents/me/transfer-in' : '/agents/me/transfer-out',
      {
        config: { auth: 'agent', permission: 'TRANSACT' },
        schema: {
          tags: operations,
          operationId: direction === 'IN' ? 'agentCreateTransferIn' : 'agentCreateTransferOut',
          summary: direction === 'IN' ? 'Pull from an external account' : 'Pay out to an external account',
          description: 'CREATE_TRANSFERS and the spending limits; both accounts must be the customer’s (else 404). Executed (APPROVED) or PENDING_APPROVAL.',
          body: direction === 'IN' ? TransferInRequest : TransferOutRequest,
          response: { 201: AgentAction, ...errorResponses(403, 404, 429) },
        },
      },
      async (req, reply) => reply.code(201).send(await createMyTransfer(deps, authOf(req), nowOf(req, clock), req.body as never, direction)),
    );
  }

  app.get(
    '/agents/me/internal-accounts',
    {
      config: { auth: 'agent' },
      schema: {
        tags: operations,
        operationId: 'agentListInternalAccounts',
        summary: 'The customer’s internal accounts',
        description: 'VIEW_TRANSACTIONS. Only the accounts accountRestrictions allows, with their balances.',
        querystring: AgentInternalAccountQuery,
        response: { 200: InternalAccountListResponse, ...errorResponses() },
      },
    },
    async (req) => listMyInternalAccounts(store.db, authOf(req), req.query),
  );

  app.get(
    '/agents/me/external-accounts',
    {
      config: { auth: 'agent' },
      serializerCompiler: jsonSerializer,
      schema: {
        tags: operations,
        operationId: 'agentListExternalAccounts',
        summary: 'The customer’s external accounts',
        description: 'MANAGE_EXTERNAL_ACCOUNTS.',
        querystring: AgentExternalAccountQuery,
        response: { 200: ExternalAccountListResponse, ...errorResponses() },
      },
    },
    async (req) => listMyExternalAccounts(store.db, authOf(req), req.query),
  );

  app.post(
    '/agents/me/external-accounts',
    {
      config: { auth: 'agent', permission: 'TRANSACT' },
      validatorCompiler: lazyBody(ExternalAccountCreateRequest),
      serializerCompiler: jsonSerializer,
      // The agent's permission and customer first, then the body's checks as for the platform.
      preValidation: async (req) => {
        const auth = authOf(req);
        const now = { ms: platformNowMs(clock, Number(auth.platform.clock_offset_ms)), at: '' };
        now.at = iso(now.ms);
        await checkAgentExternalAccountBody(store, auth, req.body, now);
      },
      schema: {
        tags: operations,
        operationId: 'agentCreateExternalAccount',
        summary: 'Add an external account',
        description: 'MANAGE_EXTERNAL_ACCOUNTS. customerId defaults to the agent’s customer (another customer: 404).',
        body: ExternalAccountCreateRequest,
        response: { 201: ExternalAccount, ...errorResponses(409) },
      },
    },
    async (req, reply) => {
      const account = await createAgentExternalAccount(store, authOf(req), req.body, nowOf(req, clock));
      return reply.code(201).send(account);
    },
  );

  app.get(
    '/agents/me/external-accounts/:externalAccountId',
    {
      config: { auth: 'agent' },
      serializerCompiler: jsonSerializer,
      schema: {
        tags: operations,
        operationId: 'agentGetExternalAccount',
        summary: 'An external account of the customer',
        description: 'MANAGE_EXTERNAL_ACCOUNTS. Another customer’s: 404.',
        params: ExternalAccountIdParams,
        response: { 200: ExternalAccount, ...errorResponses(404) },
      },
    },
    async (req) => getMyExternalAccount(store.db, authOf(req), req.params.externalAccountId),
  );

  app.delete(
    '/agents/me/external-accounts/:externalAccountId',
    {
      config: { auth: 'agent', permission: 'TRANSACT' },
      schema: {
        tags: operations,
        operationId: 'agentDeleteExternalAccount',
        summary: 'Delete an external account of the customer',
        description: 'MANAGE_EXTERNAL_ACCOUNTS. Another customer’s: 404.',
        params: ExternalAccountIdParams,
        response: { 204: NoContent, ...errorResponses(404) },
      },
    },
    async (req, reply) => {
      await deleteMyExternalAccount(store, authOf(req), req.params.externalAccountId, nowOf(req, clock));
      return reply.code(204).send(null);
    },
  );
};
