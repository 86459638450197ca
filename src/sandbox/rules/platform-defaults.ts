// What a new sandbox platform starts with. Amounts are in each currency's smallest unit.

export interface CurrencyConfigDefault {
  currencyCode: string;
  minAmount: number;
  maxAmount: number;
}

export const DEFAULT_SUPPORTED_CURRENCIES: readonly CurrencyConfigDefault[] = [
  { currencyCode: 'USD', minAmount: 100, maxAmount: 10_000_000 }, // $1 to $100,000
  { currencyCode: 'EUR', minAmount: 100, maxAmount: 10_000_000 },
  { currencyCode: 'MXN', minAmount: 2_000, maxAmount: 200_000_000 },
  { currencyCode: 'BRL', minAmount: 500, maxAmount: 50_000_000 },
  { currencyCode: 'GBP', minAmount: 100, maxAmount: 10_000_000 },
  { currencyCode: 'INR', minAmount: 10_000, maxAmount: 800_000_000 },
  { currencyCode: 'USDC', minAmount: 1_000_000, maxAmount: 100_000_000_000 }, // 1 to 100,000 USDC
  { currencyCode: 'USDT', minAmount: 1_000_000, maxAmount: 100_000_000_000 }, // 1 to 100,000 USDT
  { currencyCode: 'BTC', minAmount: 1_000, maxAmount: 200_000_000 }, // 1,000 sats to 2 BTC
];

export const DEFAULT_REQUIRED_COUNTERPARTY_FIELDS = [{ name: 'FULL_NAME', mandatory: true }] as const;

export const DEFAULT_ENABLED_TRANSACTION_TYPES = ['OUTGOING', 'INCOMING'] as const;

/** The UMA domain a new platform gets: its own subdomain of the sandbox platform domain. */
export function defaultUmaDomain(platformName: string, platformId: string): string {
  const slug =
    platformName
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 40) || 'platform';
  const suffix = platformId.slice(-6).toLowerCase();
  return `${slug}-${suffix}.platforms.sandbox.uma.money`;
}

/**
 * The subdomain a platform's UMA domain proxies to (`proxyUmaSubdomain` in GET /config): the
 * domain's first label, lower-cased (`mycompany.com` → `mycompany`; a default sandbox domain
 * → `<slug>-<last 6 characters of the platform id>`). Set with the domain, at platform
 * creation and on each `umaDomain` change.
 */
export function proxyUmaSubdomainOf(umaDomain: string): string {
  return umaDomain.toLowerCase().split('.')[0]!;
}

/** Sandbox options a platform can change through /admin. */
export interface PlatformOptions {
  /** The dashboard option "Skip verification paperwork": the suffix decides with no documents. */
  skipVerificationPaperwork: boolean;
  /** The dashboard's invitations setup (issue 20): false answers POST /invitations and claims 400 INVITATIONS_NOT_CONFIGURED. */
  invitationsConfigured: boolean;
}

export const DEFAULT_PLATFORM_OPTIONS: PlatformOptions = { skipVerificationPaperwork: false, invitationsConfigured: true };
