import { Type, type Static } from 'typebox';
import { ListOf, PageQuery } from '../../kernel/pagination.js';
import { AccountInfoCreate, AccountInfoView, EXTERNAL_ACCOUNT_TYPES } from './account-info.js';

// External accounts: bank accounts and wallets of customers and of the platform, and the
// ownership verification of self-custody wallets (EU Travel Rule).

export const ExternalAccountType = Type.Enum([...EXTERNAL_ACCOUNT_TYPES], { description: 'Type of external account or wallet' });

export const ExternalAccountStatus = Type.Enum(['PENDING', 'ACTIVE', 'PENDING_OWNERSHIP_VERIFICATION', 'UNVERIFIED', 'UNDER_REVIEW', 'INACTIVE'], {
  description:
    'PENDING_OWNERSHIP_VERIFICATION: the self-custody wallet must prove ownership before unrestricted use (transfers below the regulatory threshold are allowed). ' +
    'UNVERIFIED: the last verification attempt failed; start a new challenge to retry. Successful verification moves the account to ACTIVE.',
});
export type ExternalAccountStatus = Static<typeof ExternalAccountStatus>;

export const OwnershipType = Type.Enum(['FIRST_PARTY', 'THIRD_PARTY'], {
  description: 'Whether the account belongs to the customer (or platform) itself (FIRST_PARTY) or to someone else (THIRD_PARTY)',
});

export const BeneficiaryVerificationStatus = Type.Enum(['MATCHED', 'PARTIAL_MATCH', 'NOT_MATCHED', 'UNSUPPORTED', 'CHECKED_BY_RECEIVING_FI', 'PENDING'], {
  description: 'The result of verifying the beneficiary name against the account holder name',
});

export const BeneficiaryVerifiedData = Type.Object(
  { fullName: Type.Optional(Type.String({ description: 'The verified full name of the account holder as returned by the payment rail' })) },
  { description: 'Verified beneficiary data returned by the payment rail, if available' },
);

const platformAccountId = Type.String({ minLength: 1, maxLength: 255, description: "Your platform's identifier for the account" });
const currency = Type.String({ minLength: 1, maxLength: 16, description: 'The currency of the account; it must be one the accountType holds (MXN_ACCOUNT: MXN, …)' });

export const ExternalAccountCreateRequest = Type.Object(
  {
    customerId: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'The customer the account belongs to. Without it the account is the platform’s own, created exactly as POST /platform/external-accounts creates it (listed and read under /platform/external-accounts)',
      }),
    ),
    currency,
    platformAccountId: Type.Optional(platformAccountId),
    ownershipType: Type.Optional(OwnershipType),
    defaultUmaDepositAccount: Type.Optional(
      Type.Boolean({ description: "Make this the customer's default UMA deposit account (replacing any other); false if not provided" }),
    ),
    accountInfo: AccountInfoCreate,
  },
  { title: 'ExternalAccountCreateRequest' },
);
export type ExternalAccountCreateRequest = Static<typeof ExternalAccountCreateRequest>;

export const PlatformExternalAccountCreateRequest = Type.Object(
  { currency, platformAccountId: Type.Optional(platformAccountId), ownershipType: Type.Optional(OwnershipType), accountInfo: AccountInfoCreate },
  { title: 'PlatformExternalAccountCreateRequest' },
);
export type PlatformExternalAccountCreateRequest = Static<typeof PlatformExternalAccountCreateRequest>;

export const ExternalAccount = Type.Object(
  {
    id: Type.String({ description: 'ExternalAccount:<uuid>' }),
    customerId: Type.Optional(Type.String({ description: 'The customer the account belongs to; absent for platform accounts' })),
    status: ExternalAccountStatus,
    platformAccountId: Type.Optional(Type.String()),
    ownershipType: Type.Optional(OwnershipType),
    currency: Type.String({ description: 'The currency of the account' }),
    defaultUmaDepositAccount: Type.Optional(Type.Boolean()),
    beneficiaryVerificationStatus: Type.Optional(BeneficiaryVerificationStatus),
    beneficiaryVerifiedData: Type.Optional(BeneficiaryVerifiedData),
    accountInfo: AccountInfoView,
  },
  { title: 'ExternalAccount' },
);
export type ExternalAccount = Static<typeof ExternalAccount>;

export const ExternalAccountListResponse = ListOf(ExternalAccount, 'external accounts');

export const ExternalAccountListQuery = Type.Object({
  customerId: Type.Optional(Type.String({ description: 'Only the accounts of this customer' })),
  currency: Type.Optional(Type.String({ description: 'Only the accounts in this currency' })),
  ...PageQuery,
});

export const PlatformExternalAccountListQuery = Type.Object({
  currency: Type.Optional(Type.String({ description: 'Only the accounts in this currency' })),
  ...PageQuery,
});

export const ExternalAccountIdParams = Type.Object({ externalAccountId: Type.String({ description: 'ExternalAccount:<uuid>' }) });

// Ownership verification

export const OwnershipVerificationMethod = Type.Enum(['WALLET_SIGNATURE', 'LIVENESS'], {
  description: 'WALLET_SIGNATURE: sign a message with the wallet key. LIVENESS: a hosted verification page',
});

export const OwnershipChallengeRequest = Type.Object({ method: OwnershipVerificationMethod }, { title: 'OwnershipChallengeRequest' });
export type OwnershipChallengeRequest = Static<typeof OwnershipChallengeRequest>;

export const SIGNATURE_FORMATS = ['EIP191_PERSONAL_SIGN', 'TRON_SIGN_MESSAGE_V2', 'BITCOIN_SIGNED_MESSAGE', 'ED25519_BASE58'] as const;

export const WalletSignatureChallenge = Type.Object(
  {
    method: Type.Literal('WALLET_SIGNATURE'),
    messageToSign: Type.String({ description: 'The exact message the wallet must sign, character for character' }),
    expiresAt: Type.String({ format: 'date-time', description: 'Submit the signature before this time' }),
    nonce: Type.String({ description: 'The challenge nonce (also inside messageToSign)' }),
    algorithm: Type.Enum(['secp256k1', 'ed25519'], { description: "The curve of the wallet's key" }),
    signatureFormat: Type.Enum([...SIGNATURE_FORMATS], {
      description:
        'How to sign and encode: EIP191_PERSONAL_SIGN (EVM personal_sign, hex r‖s‖v), TRON_SIGN_MESSAGE_V2 (hex r‖s‖v), ' +
        'BITCOIN_SIGNED_MESSAGE (BIP-137 or Electrum, base64, by the Spark identity key), ED25519_BASE58 (raw Ed25519 over the UTF-8 message, base58)',
    }),
  },
  { title: 'WalletSignatureChallenge' },
);

export const LivenessChallenge = Type.Object(
  {
    method: Type.Literal('LIVENESS'),
    verificationLink: Type.String({ format: 'uri', description: 'Hosted verification page to present to the user' }),
    expiresAt: Type.String({ format: 'date-time', description: 'The page is open until this time' }),
  },
  { title: 'LivenessChallenge' },
);

export const OwnershipChallenge = Type.Union([WalletSignatureChallenge, LivenessChallenge], { title: 'OwnershipChallenge' });
export type OwnershipChallenge = Static<typeof OwnershipChallenge>;

export const OwnershipVerifyRequest = Type.Object(
  {
    signature: Type.String({
      minLength: 1,
      maxLength: 1024,
      description: 'The signature over the exact messageToSign: EIP-191 hex for EVM chains, hex for Tron, base64 for Spark (Bitcoin message signing), base58 Ed25519 for Solana',
    }),
    signatureScheme: Type.Optional(
      Type.Enum(['bip137', 'electrum'], { default: 'bip137', description: 'Bitcoin message-signing format (Spark); ignored for other chains' }),
    ),
  },
  { title: 'OwnershipVerifyRequest' },
);
export type OwnershipVerifyRequest = Static<typeof OwnershipVerifyRequest>;
