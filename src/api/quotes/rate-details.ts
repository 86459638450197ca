import type { OutgoingRateDetails } from './schemas.js';

// A quote's rateDetails as stored (quotes.rate_details, and the transaction the quote
// executes copies it): the six numbers in a fixed order, `[1,0,1,0,0,0]`, instead of the
// object's JSON with its names (151 bytes for a same-currency quote, twice per payment flow;
// issue 15: bytes per flow). Rows written before hold the object's JSON and still read.

const FIELDS = [
  'counterpartyMultiplier',
  'counterpartyFixedFee',
  'gridApiMultiplier',
  'gridApiFixedFee',
  'gridApiVariableFeeRate',
  'gridApiVariableFeeAmount',
] as const satisfies readonly (keyof OutgoingRateDetails)[];

export function packRateDetails(d: OutgoingRateDetails): string {
  return JSON.stringify(FIELDS.map((f) => d[f]));
}

export function unpackRateDetails(stored: string): OutgoingRateDetails {
  const parsed = JSON.parse(stored) as OutgoingRateDetails | number[];
  if (!Array.isArray(parsed)) return parsed;
  const d = {} as Record<(typeof FIELDS)[number], number>;
  FIELDS.forEach((f, i) => (d[f] = parsed[i]!));
  return d;
}
