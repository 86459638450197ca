import type { Kysely, Transaction } from 'kysely';
import type { Store } from '../../kernel/db/connect.js';
import { TableCache } from '../../kernel/db/table-cache.js';
import type { DB } from '../../kernel/db/schema.js';
import type { Hooks } from '../../kernel/hooks.js';
import { apiError, type FieldError, FieldErrors } from '../../kernel/errors.js';
import { emitEvent } from '../../kernel/events.js';
import { newId } from '../../kernel/ids.js';
import {
  DEFAULT_ENABLED_TRANSACTION_TYPES,
  DEFAULT_REQUIRED_COUNTERPARTY_FIELDS,
  DEFAULT_SUPPORTED_CURRENCIES,
  defaultUmaDomain,
  proxyUmaSubdomainOf,
} from '../../sandbox/rules/platform-defaults.js';
import type { PlatformRow } from '../../operator/platforms/store.js';
import type { WebhookTargets } from '../webhooks/targets.js';
import type { CardTokenization2FAConfig, EmbeddedWalletConfig, FeeConfig, PlatformConfig, PlatformConfigUpdateRequest, PlatformCurrencyConfig } from './schemas.js';
import { activeFees, type ConfigRow, type FeeRow, findConfig, findConfigForUpdate, insertConfig, updateConfig, upsertFee } from './store.js';

type Db = Kysely<DB> | Transaction<DB>;

/** The webhook sent to a newly configured endpoint (docs/webhooks.md, "Test webhook"). */
export const TEST_WEBHOOK_TYPE = 'TEST';

/** Source currencies platform fees may be charged in today. */
export const FEE_SOURCE_CURRENCIES = ['USD'];

export async function insertDefaultConfig(db: Db, platform: PlatformRow, at: string): Promise<void> {
  const supported: PlatformCurrencyConfig[] = DEFAULT_SUPPORTED_CURRENCIES.map((c) => ({
    currencyCode: c.currencyCode,
    minAmount: c.minAmount,
    maxAmount: c.maxAmount,
    requiredCounterpartyFields: DEFAULT_REQUIRED_COUNTERPARTY_FIELDS.map((f) => ({ ...f })),
    enabledTransactionTypes: [...DEFAULT_ENABLED_TRANSACTION_TYPES],
  }));
  const umaDomain = defaultUmaDomain(platform.name, platform.id);
  await insertConfig(db, {
    platform_id: platform.id,
    id: newId('PlatformConfig'),
    uma_domain: umaDomain,
    proxy_uma_subdomain: proxyUmaSubdomainOf(umaDomain),
    webhook_endpoint: null,
    supported_currencies: JSON.stringify(supported),
    embedded_wallet_config: null,
    card_tokenization_2fa_config: null,
    created_at: at,
    updated_at: at,
  });
}

function feeView(r: FeeRow): FeeConfig {
  return {
    feeType: r.fee_type as FeeConfig['feeType'],
    sourceCurrency: r.source_currency,
    variableFeeBps: Number(r.variable_fee_bps),
    fixedFee: { amount: Number(r.fixed_fee_amount), currency: r.fixed_fee_currency },
  };
}

function configView(row: ConfigRow, platform: PlatformRow, fees: FeeRow[]): PlatformConfig {
  const v: PlatformConfig = {
    id: row.id,
    umaDomain: row.uma_domain,
    supportedCurrencies: JSON.parse(row.supported_currencies) as PlatformCurrencyConfig[],
    isRegulatedFinancialInstitution: platform.regulated === 1,
    feeConfigs: fees.map(feeView),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
  if (row.proxy_uma_subdomain) v.proxyUmaSubdomain = row.proxy_uma_subdomain;
  if (row.webhook_endpoint) v.webhookEndpoint = row.webhook_endpoint;
  if (row.embedded_wallet_config) v.embeddedWalletConfig = JSON.parse(row.embedded_wallet_config) as EmbeddedWalletConfig;
  if (row.card_tokenization_2fa_config) v.cardTokenization2faConfig = JSON.parse(row.card_tokenization_2fa_config) as CardTokenization2FAConfig;
  return v;
}

/** What creating a customer or an account needs of the configuration. */
export interface PlatformSettings {
  /** The supported currencies' codes, in the configuration's order. */
  readonly supportedCurrencies: readonly string[];
  readonly umaDomain: string;
}

/** A platform's settings, kept while platform_configs does not change (db/table-cache.ts; frozen). */
const settingsCache = new TableCache<string, Readonly<PlatformSettings>>(['platform_configs']);

/**
 * The supported currencies and UMA domain of a platform: the configuration's row alone, read
 * once per change of the table instead of the whole configuration (its fees too) at every
 * create (issue 15: two statements per `POST /customers`).
 */
export function platformSettings(db: Db, platformId: string): Promise<Readonly<PlatformSettings>> {
  return settingsCache.get(db, platformId, async () => {
    const row = await findConfig(db, platformId);
    if (!row) throw new Error(`platform ${platformId} has no configuration row`);
    const currencies = (JSON.parse(row.supported_currencies) as PlatformCurrencyConfig[]).map((c) => c.currencyCode);
    return Object.freeze({ supportedCurrencies: Object.freeze(currencies), umaDomain: row.uma_domain });
  });
}

export async function getConfig(db: Db, platform: PlatformRow): Promise<PlatformConfig> {
  const row = await findConfig(db, platform.id);
  if (!row) throw new Error(`platform ${platform.id} has no configuration row`);
  return configView(row, platform, await activeFees(db, platform.id));
}

/** Fields the caller left out stay as they are; nested objects merge field by field. */
function mergeObject<T extends object>(current: string | null, patch: T): string {
  const base = current ? (JSON.parse(current) as Record<string, unknown>) : {};
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(patch)) {
    if (v !== undefined && v !== null && typeof v === 'object' && !Array.isArray(v) && typeof base[k] === 'object' && base[k] !== null) {
      out[k] = { ...(base[k] as object), ...(v as object) };
    } else if (v !== undefined) {
      out[k] = v;
    }
  }
  return JSON.stringify(out);
}

/** PlatformConfig fields a PATCH may not carry: isRegulatedFinancialInstitution is fixed when the platform is created. */
export const READ_ONLY_FIELDS = ['isRegulatedFinancialInstitution'] as const;

/** One error per read-only field present in a PATCH body. */
export function readOnlyFieldErrors(body: unknown): FieldError[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return [];
  return READ_ONLY_FIELDS.filter((f) => (body as Record<string, unknown>)[f] !== undefined).map((field) => ({
    field,
    message: 'is read-only: it is fixed when the platform is created',
  }));
}

/**
 * The error of a webhookEndpoint the server refuses to send to (api/webhooks/targets.ts):
 * its own listening address, or a private-network address when they are not allowed. A host
 * name is resolved and refused when any of its addresses is (delivery checks again).
 */
export async function endpointFieldErrors(body: unknown, targets: WebhookTargets | undefined): Promise<FieldError[]> {
  if (!targets || typeof body !== 'object' || body === null) return [];
  const endpoint = (body as Record<string, unknown>).webhookEndpoint;
  if (typeof endpoint !== 'string') return [];
  const why = await targets.refusalOfUrlResolved(endpoint);
  return why ? [{ field: 'webhookEndpoint', message: why }] : [];
}

async function checkUpdate(body: PlatformConfigUpdateRequest, targets: WebhookTargets | undefined): Promise<void> {
  const errors = new FieldErrors();
  for (const e of [...readOnlyFieldErrors(body), ...(await endpointFieldErrors(body, targets))]) errors.add(e.field, e.message);
  body.supportedCurrencies?.forEach((c, i) => {
    if (c.minAmount > c.maxAmount) errors.add(`supportedCurrencies.${i}.minAmount`, 'must not be greater than maxAmount');
  });
  const codes = body.supportedCurrencies?.map((c) => c.currencyCode) ?? [];
  codes.forEach((code, i) => {
    if (codes.indexOf(code) !== i) errors.add(`supportedCurrencies.${i}.currencyCode`, `lists ${code} a second time`);
  });
  const keys = new Set<string>();
  body.feeConfigs?.forEach((f, i) => {
    const key = `${f.feeType}/${f.sourceCurrency}`;
    if (keys.has(key)) errors.add(`feeConfigs.${i}`, `repeats the fee config for (${f.feeType}, ${f.sourceCurrency})`);
    keys.add(key);
    if (f.fixedFee.currency !== f.sourceCurrency) {
      errors.add(`feeConfigs.${i}.fixedFee.currency`, `must be the fee's source currency ${f.sourceCurrency}`, { enum: [f.sourceCurrency] });
    }
  });
  errors.throwIfAny();
  const other = body.feeConfigs?.find((f) => !FEE_SOURCE_CURRENCIES.includes(f.sourceCurrency));
  if (other) {
    // The reference's answer for a fee in another source currency.
    throw apiError(501, 'NOT_IMPLEMENTED', `Platform fees can only be charged on a USD source currency today; ${other.sourceCurrency} is not available`, {
      field: 'feeConfigs.sourceCurrency',
      supportedSourceCurrencies: FEE_SOURCE_CURRENCIES,
    });
  }
}

export async function updatePlatformConfig(
  deps: { store: Store; hooks: Hooks; webhooks?: { targets?: WebhookTargets | undefined } },
  platform: PlatformRow,
  at: string,
  body: PlatformConfigUpdateRequest,
): Promise<PlatformConfig> {
  const { store, hooks } = deps;
  await checkUpdate(body, deps.webhooks?.targets);
  return store.db.transaction().execute(async (trx) => {
    // Locked: nested objects are merged with what is stored, so concurrent PATCHes must queue.
    const row = await findConfigForUpdate(trx, platform.id, store.kind === 'postgres');
    if (!row) throw new Error(`platform ${platform.id} has no configuration row`);
    const patch: Parameters<typeof updateConfig>[2] = { updated_at: at };
    if (body.umaDomain !== undefined) {
      patch.uma_domain = body.umaDomain.toLowerCase();
      patch.proxy_uma_subdomain = proxyUmaSubdomainOf(patch.uma_domain);
    }
    if (body.webhookEndpoint !== undefined) patch.webhook_endpoint = body.webhookEndpoint;
    if (body.supportedCurrencies !== undefined) {
      // Keep the writable fields only: providerRequired* are the provider's, read-only.
      const writable = body.supportedCurrencies.map(({ currencyCode, minAmount, maxAmount, requiredCounterpartyFields, enabledTransactionTypes }) => ({
        currencyCode, minAmount, maxAmount, requiredCounterpartyFields, enabledTransactionTypes,
      }));
      patch.supported_currencies = JSON.stringify(writable);
    }
    if (body.embeddedWalletConfig !== undefined) patch.embedded_wallet_config = mergeObject(row.embedded_wallet_config, body.embeddedWalletConfig);
    if (body.cardTokenization2faConfig !== undefined) patch.card_tokenization_2fa_config = mergeObject(row.card_tokenization_2fa_config, body.cardTokenization2faConfig);
    await updateConfig(trx, platform.id, patch);
    for (const f of body.feeConfigs ?? []) {
      const active = f.variableFeeBps > 0 || f.fixedFee.amount > 0 ? 1 : 0;
      await upsertFee(trx, {
        platform_id: platform.id,
        fee_type: f.feeType,
        source_currency: f.sourceCurrency,
        variable_fee_bps: f.variableFeeBps,
        fixed_fee_amount: f.fixedFee.amount,
        fixed_fee_currency: f.fixedFee.currency,
        active,
        created_at: at,
        updated_at: at,
      });
    }
    // A new webhook endpoint gets a TEST webhook (hosted docs: sent automatically when the
    // configuration gets a new webhook URL). It is an event like any other, committed with
    // the change and sent by the deliverer (one attempt, never retried), so the PATCH never
    // waits for the endpoint. Not sent when the endpoint is unchanged or removed.
    if (typeof body.webhookEndpoint === 'string' && body.webhookEndpoint !== row.webhook_endpoint) {
      await emitEvent(trx, platform.id, at, { type: TEST_WEBHOOK_TYPE, resourceId: row.id, data: {} });
    }
    // Other areas follow the change in the same transaction (the accounts area opens the
    // platform's account of a newly supported currency).
    await hooks.emitPlatformConfigUpdated({ trx, platform, at });
    return getConfig(trx, platform);
  });
}

/** The active fee config of a platform for a fee type and source currency (quotes use it). */
export async function findActiveFee(db: Db, platformId: string, feeType: string, sourceCurrency: string): Promise<FeeConfig | undefined> {
  return (await activeFees(db, platformId)).filter((r) => r.fee_type === feeType && r.source_currency === sourceCurrency).map(feeView)[0];
}
