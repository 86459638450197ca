import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { authOf, errorResponses, nowOf } from '../../kernel/http.js';
import {
  OperationIdParams,
  OperationListQuery,
  ProviderAccountIdParams,
  ProviderAccountListQuery,
  Stablecoin,
  StablecoinBurnRequest,
  StablecoinIdParams,
  StablecoinListQuery,
  StablecoinListResponse,
  StablecoinMintRequest,
  StablecoinOperation,
  StablecoinOperationListResponse,
  StablecoinProviderAccount,
  StablecoinProviderAccountLinkRequest,
  StablecoinProviderAccountListResponse,
  StablecoinRegisterRequest,
} from './schemas.js';
import {
  createBurn,
  createMint,
  getOperation,
  getProviderAccount,
  getStablecoin,
  linkProviderAccount,
  listOperations,
  listProviderAccounts,
  listStablecoins,
  registerStablecoin,
  registerStablecoinJobs,
  requireIdempotencyKey,
} from './service.js';

const tags = ['Stablecoins'];
const page = (q: { limit?: number | undefined; cursor?: string | undefined }) => ({ limit: q.limit, cursor: q.cursor });

export const stablecoinsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { store, clock, jobs } = app.deps;
  const deps = { store, jobs };
  registerStablecoinJobs(deps);
  const keyed = { config: { auth: 'basic' as const }, preHandler: async (req: Parameters<typeof requireIdempotencyKey>[0]) => requireIdempotencyKey(req) };

  app.post(
    '/stablecoin-provider-accounts',
    {
      ...keyed,
      schema: {
        tags,
        operationId: 'linkStablecoinProviderAccount',
        summary: 'Link a stablecoin provider account',
        description: 'Idempotency-Key required. Sandbox: a secret ending in `invalid` links the account INVALID, in `revoked` REVOKED; any other ACTIVE.',
        body: StablecoinProviderAccountLinkRequest,
        response: { 201: StablecoinProviderAccount, ...errorResponses(409) },
      },
    },
    async (req, reply) => reply.code(201).send(await linkProviderAccount(deps, authOf(req).platform, nowOf(req, clock).at, req.body)),
  );
  app.get(
    '/stablecoin-provider-accounts',
    { config: { auth: 'basic' }, schema: { tags, operationId: 'listStablecoinProviderAccounts', summary: 'List provider account links', querystring: ProviderAccountListQuery, response: { 200: StablecoinProviderAccountListResponse, ...errorResponses() } } },
    async (req) => listProviderAccounts(store.db, authOf(req).platform.id, { provider: req.query.provider, status: req.query.status }, page(req.query)),
  );
  app.get(
    '/stablecoin-provider-accounts/:stablecoinProviderAccountId',
    { config: { auth: 'basic' }, schema: { tags, operationId: 'getStablecoinProviderAccount', summary: 'Get a provider account link', params: ProviderAccountIdParams, response: { 200: StablecoinProviderAccount, ...errorResponses(404) } } },
    async (req) => getProviderAccount(store.db, authOf(req).platform.id, req.params.stablecoinProviderAccountId),
  );

  app.post(
    '/stablecoins',
    {
      ...keyed,
      schema: {
        tags,
        operationId: 'registerStablecoin',
        summary: 'Register a stablecoin',
        description: 'Idempotency-Key required. Against the link named, or the platform’s only ACTIVE link (several: STABLECOIN_PROVIDER_ACCOUNT_SELECTION_REQUIRED).',
        body: StablecoinRegisterRequest,
        response: { 201: Stablecoin, ...errorResponses(404, 409) },
      },
    },
    async (req, reply) => reply.code(201).send(await registerStablecoin(deps, authOf(req).platform, nowOf(req, clock).at, req.body)),
  );
  app.get(
    '/stablecoins',
    { config: { auth: 'basic' }, schema: { tags, operationId: 'listStablecoins', summary: 'List stablecoins', querystring: StablecoinListQuery, response: { 200: StablecoinListResponse, ...errorResponses() } } },
    async (req) =>
      listStablecoins(store.db, authOf(req).platform.id, { issuanceStatus: req.query.issuanceStatus, gridOperationsStatus: req.query.gridOperationsStatus, provider: req.query.provider }, page(req.query)),
  );
  app.get(
    '/stablecoins/:stablecoinId',
    { config: { auth: 'basic' }, schema: { tags, operationId: 'getStablecoin', summary: 'Get a stablecoin', params: StablecoinIdParams, response: { 200: Stablecoin, ...errorResponses(404) } } },
    async (req) => getStablecoin(store.db, authOf(req).platform.id, req.params.stablecoinId),
  );
  app.post(
    '/stablecoins/:stablecoinId/mints',
    {
      ...keyed,
      schema: {
        tags,
        operationId: 'createStablecoinMint',
        summary: 'Mint',
        description:
          'Idempotency-Key required. Funded from the platform’s internal account (held now), by wire (PENDING_FUNDING with instructions), by ACH or same-day ACH debit of the platform’s external account (PENDING_FUNDING), or from the balance held at the provider. An unknown referenced account is 404 REFERENCE_NOT_FOUND. See docs/stablecoins.md for the sandbox timings.',
        params: StablecoinIdParams,
        body: StablecoinMintRequest,
        response: { 201: StablecoinOperation, ...errorResponses(404, 409) },
      },
    },
    async (req, reply) => reply.code(201).send(await createMint(deps, authOf(req).platform, nowOf(req, clock), req.params.stablecoinId, req.body)),
  );
  app.post(
    '/stablecoins/:stablecoinId/burns',
    {
      ...keyed,
      schema: {
        tags,
        operationId: 'createStablecoinBurn',
        summary: 'Burn',
        description:
          'Idempotency-Key required. Redeems outstanding supply to an external account; the reserve is held now. An EXTERNAL_ACCOUNT source waits PENDING_FUNDING with Spark funding instructions (the deposit address) until the tokens arrive.',
        params: StablecoinIdParams,
        body: StablecoinBurnRequest,
        response: { 201: StablecoinOperation, ...errorResponses(404, 409) },
      },
    },
    async (req, reply) => reply.code(201).send(await createBurn(deps, authOf(req).platform, nowOf(req, clock), req.params.stablecoinId, req.body)),
  );
  app.get(
    '/stablecoins/:stablecoinId/operations',
    {
      config: { auth: 'basic' },
      schema: { tags, operationId: 'listStablecoinOperations', summary: 'List a stablecoin’s operations', params: StablecoinIdParams, querystring: OperationListQuery, response: { 200: StablecoinOperationListResponse, ...errorResponses(404) } },
    },
    async (req) => listOperations(store.db, authOf(req).platform.id, req.params.stablecoinId, { operationType: req.query.operationType }, page(req.query)),
  );
  app.get(
    '/stablecoin-operations/:stablecoinOperationId',
    { config: { auth: 'basic' }, schema: { tags, operationId: 'getStablecoinOperation', summary: 'Get a stablecoin operation', params: OperationIdParams, response: { 200: StablecoinOperation, ...errorResponses(404) } } },
    async (req) => getOperation(store.db, authOf(req).platform.id, req.params.stablecoinOperationId),
  );
};
