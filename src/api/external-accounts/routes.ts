import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { authOf, errorResponses, jsonSerializer, lazyBody, NoContent, nowOf } from '../../kernel/http.js';
import { checkSchema } from '../../kernel/validation.js';
import {
  ExternalAccount,
  ExternalAccountCreateRequest,
  ExternalAccountIdParams,
  ExternalAccountListQuery,
  ExternalAccountListResponse,
  OwnershipChallenge,
  OwnershipChallengeRequest,
  OwnershipVerifyRequest,
  PlatformExternalAccountCreateRequest,
  PlatformExternalAccountListQuery,
} from './schemas.js';
import {
  createExternalAccount,
  deleteExternalAccount,
  getExternalAccount,
  listExternalAccounts,
  rejectCreateBody,
  startOwnershipChallenge,
  verifyOwnership,
} from './service.js';

// /customers/external-accounts and its /platform/external-accounts twin: the same
// operations, a customer's accounts on one side and the platform's own on the other (an
// id of the other side answers 404 like an unknown one). BasicAuth only, as the reference.

const tags = ['External Accounts'];


export const externalAccountsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { store, clock } = app.deps;
  const deps = { store, clock };

  for (const owner of ['customer', 'platform'] as const) {
    const base = owner === 'customer' ? '/customers/external-accounts' : '/platform/external-accounts';
    const op = (customerName: string, platformName: string) => (owner === 'customer' ? customerName : platformName);
    const CreateBody = owner === 'customer' ? ExternalAccountCreateRequest : PlatformExternalAccountCreateRequest;

    app.post(
      base,
      {
        config: { auth: 'basic' },
        validatorCompiler: lazyBody(CreateBody),
        serializerCompiler: jsonSerializer,
        // A body its schema refuses is answered here, with the rail checks in the same 400.
        preValidation: async (req) => {
          const errors = checkSchema(CreateBody, req.body ?? null);
          if (errors.length > 0) await rejectCreateBody(deps, authOf(req).platform, owner, req.body, errors);
        },
        schema: {
          tags,
          operationId: op('createCustomerExternalAccount', 'createPlatformExternalAccount'),
          summary: op('Add an external account for a customer', 'Add an external account for the platform'),
          description:
            'Registers a bank account or wallet. accountInfo is validated the way its rail does (ABA and IBAN check digits, ' +
            'addresses and their checksums; CLABE, CPF and CNPJ by their form); every invalid field comes back in one 400. The sandbox verifies the beneficiary name by the ' +
            "suffix of the account's identifier (suffix 105: 400 INVALID_BANK_ACCOUNT). FIRST_PARTY self-custody wallets start " +
            'PENDING_OWNERSHIP_VERIFICATION; other accounts ACTIVE.' +
            op(
              ' Without customerId the account is created on behalf of the platform, exactly as POST /platform/external-accounts creates it (then read, listed and deleted under /platform/external-accounts).',
              '',
            ),
          body: CreateBody,
          response: { 201: ExternalAccount, ...errorResponses(409) },
        },
      },
      async (req, reply) => reply.code(201).send(await createExternalAccount(deps, authOf(req).platform, nowOf(req, clock).at, owner, req.body)),
    );

    app.get(
      base,
      {
        config: { auth: 'basic' },
        serializerCompiler: jsonSerializer,
        schema: {
          tags,
          operationId: op('listCustomerExternalAccounts', 'listPlatformExternalAccounts'),
          summary: op("List customers' external accounts", "List the platform's external accounts"),
          querystring: owner === 'customer' ? ExternalAccountListQuery : PlatformExternalAccountListQuery,
          response: { 200: ExternalAccountListResponse, ...errorResponses() },
        },
      },
      async (req) => {
        const q = req.query as { customerId?: string; currency?: string; limit?: number; cursor?: string };
        return listExternalAccounts(store.db, authOf(req).platform.id, { owner, customerId: q.customerId, currency: q.currency }, { limit: q.limit, cursor: q.cursor });
      },
    );

    app.get(
      `${base}/:externalAccountId`,
      {
        config: { auth: 'basic' },
        serializerCompiler: jsonSerializer,
        schema: {
          tags,
          operationId: op('getCustomerExternalAccountById', 'getPlatformExternalAccountById'),
          summary: 'Get an external account',
          params: ExternalAccountIdParams,
          response: { 200: ExternalAccount, ...errorResponses(404) },
        },
      },
      async (req) => getExternalAccount(store.db, authOf(req).platform.id, req.params.externalAccountId, owner),
    );

    app.delete(
      `${base}/:externalAccountId`,
      {
        config: { auth: 'basic' },
        schema: {
          tags,
          operationId: op('deleteCustomerExternalAccountById', 'deletePlatformExternalAccountById'),
          summary: 'Delete an external account',
          params: ExternalAccountIdParams,
          response: { 204: NoContent, ...errorResponses(404, 409) },
        },
      },
      async (req, reply) => {
        await deleteExternalAccount(store.db, authOf(req).platform.id, nowOf(req, clock).at, owner, req.params.externalAccountId);
        return reply.code(204).send(null);
      },
    );

    app.post(
      `${base}/:externalAccountId/challenge`,
      {
        config: { auth: 'basic' },
        schema: {
          tags,
          operationId: op('createExternalAccountOwnershipChallenge', 'createPlatformExternalAccountOwnershipChallenge'),
          summary: 'Start an ownership verification challenge',
          description:
            'For a FIRST_PARTY self-custody wallet PENDING_OWNERSHIP_VERIFICATION or UNVERIFIED. WALLET_SIGNATURE returns the exact message to sign, ' +
            'its nonce and how to sign it (curve and format for the chain); LIVENESS returns a hosted page on this server. A new challenge replaces ' +
            'the previous one and returns an UNVERIFIED account to PENDING_OWNERSHIP_VERIFICATION.',
          params: ExternalAccountIdParams,
          body: OwnershipChallengeRequest,
          response: { 201: OwnershipChallenge, ...errorResponses(404, 409) },
        },
      },
      async (req, reply) =>
        reply
          .code(201)
          .send(
            await startOwnershipChallenge(deps, authOf(req).platform, nowOf(req, clock), owner, req.params.externalAccountId, req.body.method, `${req.protocol}://${req.host}`),
          ),
    );

    app.post(
      `${base}/:externalAccountId/verify`,
      {
        config: { auth: 'basic' },
        serializerCompiler: jsonSerializer,
        schema: {
          tags,
          operationId: op('verifyExternalAccountOwnership', 'verifyPlatformExternalAccountOwnership'),
          summary: 'Verify ownership with a wallet signature',
          description:
            "Checks the signature over the challenge's messageToSign, and that its signer is the account's address. Valid: the account becomes ACTIVE. " +
            'Invalid or expired: the account becomes UNVERIFIED and the answer is 400 (start a new challenge to retry). Both emit EXTERNAL_ACCOUNT.STATUS_UPDATED.',
          params: ExternalAccountIdParams,
          body: OwnershipVerifyRequest,
          response: { 200: ExternalAccount, ...errorResponses(404, 409) },
        },
      },
      async (req) => verifyOwnership(deps, authOf(req).platform, nowOf(req, clock), owner, req.params.externalAccountId, req.body),
    );
  }
};
