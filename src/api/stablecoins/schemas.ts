import { Type, type Static } from 'typebox';
import { ListOf, PageQuery } from '../../kernel/pagination.js';
import { OneOf } from '../../kernel/validation.js';

// Stablecoins: provider account links, registered stablecoins, direct mints and burns.
// The branches of the funding and burn sources are closed (additionalProperties: false), as
// every request object of the service is: a field the reference's branch does not declare
// (an externalAccountId on an EXTERNAL_ACCOUNT burn source) is refused, not ignored.

export const StablecoinProvider = Type.Enum(['BRALE'], { title: 'StablecoinProvider', description: 'The provider behind the link, stablecoin or operation' });
export const StablecoinProviderEnvironment = Type.Enum(['SANDBOX', 'PRODUCTION'], { title: 'StablecoinProviderEnvironment' });
export const StablecoinProviderAccountStatus = Type.Enum(['ACTIVE', 'INVALID', 'REVOKED'], { title: 'StablecoinProviderAccountStatus' });
export const StablecoinNetwork = Type.Enum(['SPARK'], { title: 'StablecoinNetwork' });
export const StablecoinIssuanceStatus = Type.Enum(['PENDING_REVIEW', 'PROVISIONING', 'PROVISIONED', 'REJECTED', 'FAILED'], { title: 'StablecoinIssuanceStatus' });
export const StablecoinGridOperationsStatus = Type.Enum(['NOT_ENABLED', 'PENDING_APPROVAL', 'ENABLING', 'ENABLED', 'DISABLED'], { title: 'StablecoinGridOperationsStatus' });
export const OPERATION_STATUSES = ['CREATED', 'PENDING_FUNDING', 'PENDING_PROVIDER', 'PROCESSING', 'COMPLETED', 'FAILED', 'EXPIRED'] as const;
export const StablecoinOperationStatus = Type.Enum([...OPERATION_STATUSES], { title: 'StablecoinOperationStatus' });
export const StablecoinOperationType = Type.Enum(['MINT', 'BURN'], { title: 'StablecoinOperationType' });

export const StablecoinProviderAccountLinkRequest = Type.Object(
  {
    provider: StablecoinProvider,
    apiClientId: Type.String({ minLength: 1, maxLength: 255 }),
    apiClientSecret: Type.String({ minLength: 1, maxLength: 1024, writeOnly: true, description: 'Kept only as a hash. Sandbox: ending in `invalid` links the account INVALID, in `revoked` REVOKED' }),
    providerAccountId: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  },
  { title: 'StablecoinProviderAccountLinkRequest' },
);
export type StablecoinProviderAccountLinkRequest = Static<typeof StablecoinProviderAccountLinkRequest>;

export const StablecoinProviderAccount = Type.Object(
  {
    id: Type.String({ description: 'StablecoinProviderAccount:<uuid>' }),
    provider: StablecoinProvider,
    providerAccountId: Type.String(),
    providerEnvironment: StablecoinProviderEnvironment,
    status: StablecoinProviderAccountStatus,
    lastVerifiedAt: Type.Optional(Type.String({ format: 'date-time' })),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  { title: 'StablecoinProviderAccount' },
);
export type StablecoinProviderAccount = Static<typeof StablecoinProviderAccount>;

export const StablecoinRegisterRequest = Type.Object(
  {
    providerTokenIdentifier: Type.String({ minLength: 1, maxLength: 64, description: 'The provider’s token id (Brale value_type)' }),
    networkTokenIdentifier: Type.String({ minLength: 1, maxLength: 255 }),
    network: StablecoinNetwork,
    stablecoinProviderAccountId: Type.Optional(Type.String({ description: 'Required when several links are ACTIVE' })),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Display name (default: the provider token id)' })),
    symbol: Type.Optional(Type.String({ minLength: 1, maxLength: 16, description: 'Symbol (default: the provider token id)' })),
    decimals: Type.Optional(Type.Integer({ minimum: 2, maximum: 18, description: 'Decimal places of the token (default 6)' })),
    baseCurrency: Type.Optional(Type.Enum(['USD'], { description: 'Fiat the token is denominated against (default USD)' })),
  },
  { title: 'StablecoinRegisterRequest' },
);
export type StablecoinRegisterRequest = Static<typeof StablecoinRegisterRequest>;

export const Stablecoin = Type.Object(
  {
    id: Type.String({ description: 'Stablecoin:<uuid>' }),
    name: Type.String(),
    symbol: Type.String(),
    baseCurrency: Type.String(),
    network: StablecoinNetwork,
    decimals: Type.Integer(),
    issuanceStatus: StablecoinIssuanceStatus,
    gridOperationsStatus: StablecoinGridOperationsStatus,
    networkTokenIdentifier: Type.String(),
    currency: Type.Optional(Type.String({ description: 'The currency code of the stablecoin once it is enabled for the service’s operations (gridOperationsStatus ENABLED); absent before' })),
    provider: StablecoinProvider,
    stablecoinProviderAccountId: Type.String(),
    providerEnvironment: StablecoinProviderEnvironment,
    providerTokenIdentifier: Type.String(),
    outstandingSupply: Type.String({ description: 'Minted minus burned, in the token’s smallest unit (completed operations)' }),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  { title: 'Stablecoin' },
);
export type Stablecoin = Static<typeof Stablecoin>;

const Amount = Type.String({
  pattern: '^[0-9]+$',
  maxLength: 31,
  description: 'In the token’s smallest unit, greater than 0; must be a whole cent of the base currency',
});
const InternalSource = Type.Object({ type: Type.Literal('GRID_INTERNAL_ACCOUNT'), accountId: Type.String({ description: 'The platform’s internal account in the base currency' }) }, { title: 'StablecoinGridInternalFundingSource' });
const WireSource = Type.Object({ type: Type.Literal('WIRE') }, { title: 'StablecoinWireFundingSource', additionalProperties: false });
const AchDebitSource = Type.Object(
  { type: Type.Literal('ACH_DEBIT'), externalAccountId: Type.String({ description: 'The platform’s external account in the base currency, debited by the provider' }) },
  { title: 'StablecoinAchDebitFundingSource', additionalProperties: false },
);
const SameDayAchDebitSource = Type.Object(
  { type: Type.Literal('SAME_DAY_ACH_DEBIT'), externalAccountId: Type.String({ description: 'The platform’s external account in the base currency, debited by the provider' }) },
  { title: 'StablecoinSameDayAchDebitFundingSource', additionalProperties: false },
);
const ProviderBalanceSource = Type.Object(
  {
    type: Type.Literal('PROVIDER_INTERNAL_BALANCE'),
    sourceTokenIdentifier: Type.String({ minLength: 1, maxLength: 64, description: 'The provider token spent from the balance held at the provider (e.g. USDC)' }),
    cryptoNetwork: Type.String({ minLength: 1, maxLength: 64, description: 'The network of those funds (e.g. SOLANA)' }),
  },
  { title: 'StablecoinProviderBalanceFundingSource', additionalProperties: false },
);

export const StablecoinMintRequest = Type.Object(
  {
    amount: Amount,
    fundingSource: OneOf('type', [WireSource, AchDebitSource, SameDayAchDebitSource, InternalSource, ProviderBalanceSource], { title: 'StablecoinMintFundingSource' }),
    destination: Type.Object({ accountId: Type.String({ description: 'Where the tokens go (an account of the platform)' }) }, { title: 'StablecoinMintDestination' }),
    description: Type.Optional(Type.String({ maxLength: 1024 })),
  },
  { title: 'StablecoinMintRequest' },
);
export type StablecoinMintRequest = Static<typeof StablecoinMintRequest>;

export const StablecoinBurnRequest = Type.Object(
  {
    amount: Amount,
    source: OneOf(
      'type',
      [
        Type.Object(
          { type: Type.Literal('EXTERNAL_ACCOUNT') },
          { title: 'StablecoinExternalAccountBurnSource', additionalProperties: false, description: 'The tokens are sent, from any wallet, to the deposit address of the operation’s fundingInstructions' },
        ),
        Type.Object({ type: Type.Literal('GRID_INTERNAL_ACCOUNT'), accountId: Type.String({ description: 'The platform’s internal account' }) }, { title: 'StablecoinGridInternalBurnSource', additionalProperties: false }),
        Type.Object({ type: Type.Literal('PROVIDER_INTERNAL_BALANCE') }, { title: 'StablecoinProviderBalanceBurnSource', additionalProperties: false, description: 'Tokens already held at the provider' }),
      ],
      { title: 'StablecoinBurnSource' },
    ),
    destination: Type.Object(
      {
        type: Type.Literal('EXTERNAL_ACCOUNT'),
        externalAccountId: Type.String(),
        rail: Type.Enum(['WIRE', 'ACH_CREDIT', 'SAME_DAY_ACH_CREDIT', 'RTP_CREDIT']),
      },
      { title: 'StablecoinBurnDestination' },
    ),
    description: Type.Optional(Type.String({ maxLength: 1024 })),
  },
  { title: 'StablecoinBurnRequest' },
);
export type StablecoinBurnRequest = Static<typeof StablecoinBurnRequest>;

export const StablecoinOperation = Type.Object(
  {
    id: Type.String({ description: 'StablecoinOperation:<uuid>' }),
    stablecoinId: Type.String(),
    operationType: StablecoinOperationType,
    status: StablecoinOperationStatus,
    amount: Type.String(),
    provider: StablecoinProvider,
    providerEnvironment: StablecoinProviderEnvironment,
    stablecoinProviderAccountId: Type.String(),
    source: Type.Optional(
      Type.Object(
        {
          type: Type.String(),
          accountId: Type.Optional(Type.String()),
          externalAccountId: Type.Optional(Type.String()),
          sourceTokenIdentifier: Type.Optional(Type.String()),
          cryptoNetwork: Type.Optional(Type.String()),
        },
        { additionalProperties: true },
      ),
    ),
    destination: Type.Optional(Type.Object({ accountId: Type.String(), rail: Type.Optional(Type.String()) })),
    fundingInstructions: Type.Optional(
      Type.Object(
        {
          rail: Type.String(),
          network: Type.Optional(Type.String()),
          address: Type.Optional(Type.String()),
          valueType: Type.Optional(Type.String()),
          accountNumber: Type.Optional(Type.String()),
          routingNumber: Type.Optional(Type.String()),
          reference: Type.Optional(Type.String()),
        },
        { additionalProperties: true, description: 'Wire-funded mints: the bank details; external-account burns: the Spark deposit address' },
      ),
    ),
    estimatedDelivery: Type.Optional(Type.Object({ rail: Type.String(), amount: Type.String(), currency: Type.String(), timing: Type.String() }, { additionalProperties: true })),
    expiresAt: Type.Optional(Type.String({ format: 'date-time' })),
    providerStatus: Type.Optional(Type.String()),
    failureReason: Type.Optional(Type.String()),
    description: Type.Optional(Type.String()),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  { title: 'StablecoinOperation' },
);
export type StablecoinOperation = Static<typeof StablecoinOperation>;

export const ProviderAccountListQuery = Type.Object({ provider: Type.Optional(StablecoinProvider), status: Type.Optional(StablecoinProviderAccountStatus), ...PageQuery });
export const StablecoinListQuery = Type.Object({
  issuanceStatus: Type.Optional(StablecoinIssuanceStatus),
  gridOperationsStatus: Type.Optional(StablecoinGridOperationsStatus),
  provider: Type.Optional(StablecoinProvider),
  ...PageQuery,
});
export const OperationListQuery = Type.Object({ operationType: Type.Optional(StablecoinOperationType), ...PageQuery });
export const StablecoinProviderAccountListResponse = ListOf(StablecoinProviderAccount, 'provider account links');
export const StablecoinListResponse = ListOf(Stablecoin, 'stablecoins');
export const StablecoinOperationListResponse = ListOf(StablecoinOperation, 'operations');
export const ProviderAccountIdParams = Type.Object({ stablecoinProviderAccountId: Type.String() });
export const StablecoinIdParams = Type.Object({ stablecoinId: Type.String() });
export const OperationIdParams = Type.Object({ stablecoinOperationId: Type.String() });
