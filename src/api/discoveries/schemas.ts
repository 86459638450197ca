import { Type, type Static } from 'typebox';
import { PageQuery } from '../../kernel/pagination.js';
import { EXTERNAL_ACCOUNT_TYPES } from '../../sandbox/rules/corridors.js';
import { PaymentRail } from '../exchange-rates/schemas.js';
import { CurrencySchema } from '../lookups/schemas.js';

export const DiscoveryQuery = Type.Object({
  country: Type.Optional(Type.String({ format: 'iso3166-1-alpha-2', description: 'ISO 3166-1 alpha-2 country code (e.g. PH)' })),
  currency: Type.Optional(Type.String({ format: 'iso4217', description: 'ISO 4217 currency code (e.g. PHP)' })),
});
export type DiscoveryQuery = Static<typeof DiscoveryQuery>;

export const Discovery = Type.Object(
  {
    bankName: Type.String({ description: 'Canonical name: pass it as bankName when creating an external account' }),
    displayName: Type.String({ description: 'Human-friendly name' }),
    country: Type.String({ description: 'ISO 3166-1 alpha-2 country code' }),
    currency: Type.String({ description: 'ISO 4217 currency code' }),
    paymentRails: Type.Optional(Type.Array(PaymentRail, { description: 'Rails that reach this institution in the corridor, preferred first' })),
    accountType: Type.Optional(Type.Enum([...EXTERNAL_ACCOUNT_TYPES], { description: 'External account kind to create for it' })),
  },
  { title: 'Discovery' },
);

export const DiscoveryListResponse = Type.Object({ data: Type.Array(Discovery, { description: 'Banks and payment providers matching the filters' }) });

export const UmaProviderQuery = Type.Object({
  countryCode: Type.Optional(Type.String({ description: 'ISO 3166-1 alpha-2 country: providers operating there' })),
  currencyCode: Type.Optional(Type.String({ description: 'ISO 4217 code: providers supporting it' })),
  hasBlockedProviders: Type.Optional(Type.Boolean({ description: 'Include providers not on your allow list (default true)' })),
  ...PageQuery,
  sortOrder: Type.Optional(Type.Enum(['asc', 'desc'], { default: 'desc', description: 'Order by when the provider joined the directory (default desc: newest first)' })),
});
export type UmaProviderQuery = Static<typeof UmaProviderQuery>;

export const UmaProvider = Type.Object(
  {
    name: Type.String({ description: 'Name of the UMA provider' }),
    supportedRegions: Type.Array(Type.String(), { description: 'Countries the provider operates in' }),
    domain: Type.String({ description: 'Domain of the provider\'s UMA addresses' }),
    logoUrl: Type.String({ format: 'uri' }),
    supportedCurrencies: Type.Array(CurrencySchema),
    lei: Type.String({ description: 'Legal Entity Identifier' }),
    allowListStatus: Type.Boolean({ description: 'Whether the provider is on your allow list' }),
  },
  { title: 'UmaProvider' },
);

export const UmaProviderListResponse = Type.Object({
  data: Type.Array(UmaProvider),
  hasMore: Type.Boolean(),
  nextCursor: Type.Optional(Type.String()),
  totalCount: Type.Integer(),
});

export const VaspQuery = Type.Object({ ...PageQuery });
export type VaspQuery = Static<typeof VaspQuery>;

export const Vasp = Type.Object(
  {
    vaspName: Type.String({ description: 'Pass it as vaspName when declaring a VASP-hosted counterparty' }),
    url: Type.Optional(Type.String({ format: 'uri', description: 'The VASP\'s website' })),
  },
  { title: 'Vasp' },
);

export const VaspListResponse = Type.Object({
  data: Type.Array(Vasp),
  hasMore: Type.Boolean(),
  nextCursor: Type.Optional(Type.String()),
});
