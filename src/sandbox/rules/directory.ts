import { CURRENCIES } from '../../kernel/currencies.js';
import { COUNTRY_CODES } from '../../kernel/formats.js';
import { SANDBOX_UMA_DOMAIN } from './uma.js';

// The sandbox's directories: the UMA providers (counterparty VASPs) of GET /uma-providers
// and the VASPs of GET /vasps. Fictional providers on `.example` domains, plus the sandbox
// counterparty itself; one provider is off the allow list so hasBlockedProviders=false has
// something to hide. VASPs are well-known exchanges (names and websites only).

export interface UmaProviderEntry {
  name: string;
  domain: string;
  supportedRegions: string[];
  supportedCurrencies: string[];
  /** ISO 17442 LEI (check digits valid). */
  lei: string;
  logoUrl: string;
  allowListStatus: boolean;
  /** When the provider joined the directory: the order of sortOrder. */
  listedAt: string;
}

/** An LEI from its 18-character prefix: ISO 7064 mod 97-10 check digits. */
export function lei(prefix18: string): string {
  if (!/^[0-9A-Z]{18}$/.test(prefix18)) throw new Error(`LEI prefix must be 18 characters [0-9A-Z]: ${prefix18}`);
  const digits = (s: string) => [...s].map((ch) => (ch >= 'A' && ch <= 'Z' ? String(ch.charCodeAt(0) - 55) : ch)).join('');
  const mod97 = (s: string) => [...s].reduce((r, d) => (r * 10 + Number(d)) % 97, 0);
  const check = 98 - mod97(digits(`${prefix18}00`));
  return `${prefix18}${String(check).padStart(2, '0')}`;
}

const p = (
  name: string,
  domain: string,
  supportedRegions: string[],
  supportedCurrencies: string[],
  leiPrefix: string,
  listedAt: string,
  allowListStatus = true,
): UmaProviderEntry => ({
  name,
  domain,
  supportedRegions,
  supportedCurrencies,
  lei: lei(leiPrefix),
  logoUrl: `https://${domain}/logo.png`,
  allowListStatus,
  listedAt,
});

export const UMA_PROVIDERS: readonly UmaProviderEntry[] = [
  p('Sandbox UMA', SANDBOX_UMA_DOMAIN, ['US', 'MX', 'DE', 'FR', 'ES'], ['USD', 'EUR', 'MXN', 'BTC', 'USDC'], '5493000SANDBOXUMA0', '2024-01-15T00:00:00.000Z'),
  p('Aurora Pay', 'aurorapay.example', ['US'], ['USD', 'USDC', 'BTC'], '5493000AURORAPAY00', '2024-02-01T00:00:00.000Z'),
  p('Quetzal Money', 'quetzal.example', ['MX', 'GT'], ['MXN', 'GTQ', 'USD'], '5493000QUETZALMNY0', '2024-03-10T00:00:00.000Z'),
  p('Ipanema Pay', 'ipanema.example', ['BR'], ['BRL', 'USD'], '5493000IPANEMAPAY0', '2024-04-02T00:00:00.000Z'),
  p('Saffron Pay', 'saffron.example', ['IN'], ['INR'], '5493000SAFFRONPAY0', '2024-04-20T00:00:00.000Z'),
  p('Lagos Ledger', 'lagosledger.example', ['NG', 'GH'], ['NGN', 'GHS', 'USD'], '5493000LAGOSLEDGR0', '2024-05-05T00:00:00.000Z'),
  p('Kilimanjaro Mobile', 'kilimanjaro.example', ['KE', 'TZ', 'UG', 'RW'], ['KES', 'TZS', 'UGX', 'RWF'], '5493000KILIMANJAR0', '2024-06-11T00:00:00.000Z'),
  p('Tidewater Remit', 'tidewater.example', ['PH'], ['PHP', 'USD'], '5493000TIDEWATER00', '2024-07-01T00:00:00.000Z'),
  p('Thames Digital', 'thames.example', ['GB', 'IE'], ['GBP', 'EUR'], '5493000THAMESDIGI0', '2024-08-19T00:00:00.000Z'),
  p('Nordlys Bank', 'nordlys.example', ['DK', 'DE', 'NL'], ['DKK', 'EUR'], '5493000NORDLYSBNK0', '2024-09-03T00:00:00.000Z'),
  p('Maple Transfers', 'maple.example', ['CA'], ['CAD', 'USD'], '5493000MAPLETRANS0', '2024-10-14T00:00:00.000Z'),
  p('Mekong Wallet', 'mekong.example', ['VN', 'TH'], ['VND', 'THB', 'USDT'], '5493000MEKONGWALL0', '2025-01-08T00:00:00.000Z'),
  p('Sakura Remit', 'sakura.example', ['JP'], ['JPY', 'USD'], '5493000SAKURAREMT0', '2025-03-21T00:00:00.000Z'),
  p('Sahel Money', 'sahel.example', ['SN', 'CI', 'ML'], ['XOF', 'EUR'], '5493000SAHELMONEY0', '2025-05-30T00:00:00.000Z'),
  p('Blocked Example VASP', 'blocked.example', ['US'], ['USD'], '5493000BLOCKEDVSP0', '2025-07-07T00:00:00.000Z', false),
];

export interface VaspEntry {
  vaspName: string;
  url?: string;
}

export const VASPS: readonly VaspEntry[] = [
  { vaspName: 'Binance', url: 'https://www.binance.com' },
  { vaspName: 'Bitfinex', url: 'https://www.bitfinex.com' },
  { vaspName: 'bitFlyer', url: 'https://bitflyer.com' },
  { vaspName: 'Bitget', url: 'https://www.bitget.com' },
  { vaspName: 'Bitpanda', url: 'https://www.bitpanda.com' },
  { vaspName: 'Bitso', url: 'https://bitso.com' },
  { vaspName: 'Bitstamp', url: 'https://www.bitstamp.net' },
  { vaspName: 'Bybit', url: 'https://www.bybit.com' },
  { vaspName: 'Coinbase', url: 'https://www.coinbase.com' },
  { vaspName: 'Coins.ph', url: 'https://coins.ph' },
  { vaspName: 'CoinDCX', url: 'https://coindcx.com' },
  { vaspName: 'Crypto.com', url: 'https://crypto.com' },
  { vaspName: 'Gemini', url: 'https://www.gemini.com' },
  { vaspName: 'HTX', url: 'https://www.htx.com' },
  { vaspName: 'Independent Reserve', url: 'https://www.independentreserve.com' },
  { vaspName: 'Kraken', url: 'https://www.kraken.com' },
  { vaspName: 'KuCoin', url: 'https://www.kucoin.com' },
  { vaspName: 'Luno', url: 'https://www.luno.com' },
  { vaspName: 'Mercado Bitcoin', url: 'https://www.mercadobitcoin.com.br' },
  { vaspName: 'OKX', url: 'https://www.okx.com' },
  { vaspName: 'River', url: 'https://river.com' },
  { vaspName: 'Strike', url: 'https://strike.me' },
  { vaspName: 'Upbit', url: 'https://upbit.com' },
  { vaspName: 'Valr', url: 'https://www.valr.com' },
  { vaspName: 'Self-hosted sandbox VASP' },
];

for (const e of UMA_PROVIDERS) {
  for (const c of e.supportedCurrencies) if (!CURRENCIES.has(c)) throw new Error(`UMA provider ${e.name}: unknown currency ${c}`);
  for (const r of e.supportedRegions) if (!COUNTRY_CODES.has(r)) throw new Error(`UMA provider ${e.name}: unknown region ${r}`);
}
