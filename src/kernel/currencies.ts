// Every currency the service knows: fiat (ISO 4217) and crypto (tickers). Amounts are
// always integers in the currency's smallest unit: cents for USD, satoshis for BTC,
// yen for JPY (0 decimals), and 10^-6 for USDC.

export interface Currency {
  code: string;
  name: string;
  symbol: string;
  decimals: number;
  kind: 'FIAT' | 'CRYPTO';
}

const fiat: Array<[string, string, string, number]> = [
  ['USD', 'United States Dollar', '$', 2],
  ['EUR', 'Euro', '€', 2],
  ['GBP', 'Pound Sterling', '£', 2],
  ['MXN', 'Mexican Peso', '$', 2],
  ['BRL', 'Brazilian Real', 'R$', 2],
  ['INR', 'Indian Rupee', '₹', 2],
  ['CAD', 'Canadian Dollar', '$', 2],
  ['DKK', 'Danish Krone', 'kr', 2],
  ['NGN', 'Nigerian Naira', '₦', 2],
  ['HKD', 'Hong Kong Dollar', 'HK$', 2],
  ['IDR', 'Indonesian Rupiah', 'Rp', 2],
  ['MYR', 'Malaysian Ringgit', 'RM', 2],
  ['PHP', 'Philippine Peso', '₱', 2],
  ['SGD', 'Singapore Dollar', 'S$', 2],
  ['THB', 'Thai Baht', '฿', 2],
  ['VND', 'Vietnamese Dong', '₫', 0],
  ['AED', 'United Arab Emirates Dirham', 'د.إ', 2],
  ['KES', 'Kenyan Shilling', 'KSh', 2],
  ['MWK', 'Malawian Kwacha', 'MK', 2],
  ['RWF', 'Rwandan Franc', 'FRw', 0],
  ['TZS', 'Tanzanian Shilling', 'TSh', 2],
  ['UGX', 'Ugandan Shilling', 'USh', 0],
  ['XOF', 'West African CFA Franc', 'CFA', 0],
  ['XAF', 'Central African CFA Franc', 'FCFA', 0],
  ['ZAR', 'South African Rand', 'R', 2],
  ['ZMW', 'Zambian Kwacha', 'ZK', 2],
  ['BWP', 'Botswana Pula', 'P', 2],
  ['BDT', 'Bangladeshi Taka', '৳', 2],
  ['COP', 'Colombian Peso', '$', 2],
  ['EGP', 'Egyptian Pound', 'E£', 2],
  ['GHS', 'Ghanaian Cedi', 'GH₵', 2],
  ['GTQ', 'Guatemalan Quetzal', 'Q', 2],
  ['HTG', 'Haitian Gourde', 'G', 2],
  ['JMD', 'Jamaican Dollar', 'J$', 2],
  ['PKR', 'Pakistani Rupee', '₨', 2],
  ['CNY', 'Chinese Yuan', '¥', 2],
  ['JPY', 'Japanese Yen', '¥', 0],
  ['KRW', 'South Korean Won', '₩', 0],
  ['CHF', 'Swiss Franc', 'CHF', 2],
  ['AUD', 'Australian Dollar', 'A$', 2],
];

const crypto: Array<[string, string, string, number]> = [
  ['BTC', 'Bitcoin', '₿', 8],
  ['USDC', 'USD Coin', 'USDC', 6],
  ['USDT', 'Tether USD', 'USDT', 6],
  ['ETH', 'Ether', 'Ξ', 18],
  ['SOL', 'Solana', 'SOL', 9],
];

// Note SLV_ACCOUNT in the reference is the El Salvador rail, which settles in USD.

export const CURRENCIES: ReadonlyMap<string, Currency> = new Map(
  [
    ...fiat.map(([code, name, symbol, decimals]) => ({ code, name, symbol, decimals, kind: 'FIAT' as const })),
    ...crypto.map(([code, name, symbol, decimals]) => ({ code, name, symbol, decimals, kind: 'CRYPTO' as const })),
  ].map((c) => [c.code, c]),
);

export const CURRENCY_CODES: readonly string[] = [...CURRENCIES.keys()];

export function findCurrency(code: string): Currency | undefined {
  return CURRENCIES.get(code);
}

export function getCurrency(code: string): Currency {
  const c = CURRENCIES.get(code);
  if (!c) throw new Error(`unknown currency ${code}`);
  return c;
}

/** The public Currency object of the API (no internal fields). */
export function currencyView(code: string): { code: string; name: string; symbol: string; decimals: number } {
  const c = getCurrency(code);
  return { code: c.code, name: c.name, symbol: c.symbol, decimals: c.decimals };
}
