import { deflateRawSync, inflateRawSync } from 'node:zlib';

// How an event's payload is stored (issue 15: bytes per payment flow). Each event keeps the
// resource as it was when the event happened, so every payload is stored, once, in the
// event's own row; deliveries point at the event and never copy it. The payload is kept as
// raw DEFLATE (node:zlib) against a preset dictionary of what webhook payloads share: field
// names, currency objects, statuses, the sandbox's funding-instruction text. A payment
// flow's event shrinks from about 1.3 KB of JSON to under 200 bytes; what remains is mostly
// the ids and timestamps, which no dictionary can predict.
//
// Format of `events.body`: one version byte, then the compressed UTF-8 JSON. Version 1 uses
// DICTIONARY_V1 below, a 4 KB window (windowBits 12) and memLevel 4. A dictionary can never change once rows are written with it: a new
// one gets a new version byte, and the old stays here to read old rows. Rows written before
// bodies existed have `body` NULL and the JSON in `payload`; both read through `payloadText`.

const V1 = 1;

// Under 4 KB (it must fit the window). Most useful last: DEFLATE finds matches at a shorter distance cheaper.
const DICTIONARY_V1 = Buffer.from(
  [
    '"fundingPaymentInstructions":[{"instructionsNotes":"Sandbox coordinates: no real money moves. Send by ACH, wire or RTP to the account and routing number below. Quote the reference UMA-',
    ' with the payment so it is credited to this account. To simulate a deposit, call POST /sandbox/internal-accounts/InternalAccount:',
    '/fund.","isPlatformAccount":false,"accountOrWalletInfo":{"accountType":"USD_ACCOUNT","accountNumber":"","routingNumber":"","bankName":"Payments Sandbox Bank","bankAccountType":"CHECKING","bankAddress":"1 Sandbox Plaza, New York, NY 10004","paymentRails":["ACH","WIRE","RTP","FEDNOW"],"reference":"UMA-"}}]',
    '{"code":"EUR","name":"Euro","symbol":"€","decimals":2}{"code":"MXN","name":"Mexican Peso","symbol":"$","decimals":2}{"code":"BTC","name":"Bitcoin","symbol":"₿","decimals":8}{"code":"USDC","name":"USD Coin","symbol":"USDC","decimals":6}',
    '"kycStatus":"APPROVED","customerType":"INDIVIDUAL","fullName":"","birthDate":"","nationality":"","address":{"line1":"","city":"","state":"","postalCode":"","country":"US"},"umaAddress":"$","isDeleted":false',
    '{"id":"Webhook:","type":"CUSTOMER.KYC_APPROVED","timestamp":"2026-","data":{"id":"Customer:","platformCustomerId":"',
    '{"id":"Webhook:","type":"INCOMING_PAYMENT.COMPLETED","timestamp":"2026-","data":{"id":"Transaction:","direction":"CREDIT","source":{"sourceType":"REALTIME_FUNDING","currency":"USD"},"type":"INCOMING","status":"PENDING","failureReason":null,"counterpartyInformation":{},"reconciliationInstructions":{"reference":"UMA-"}',
    '{"id":"Webhook:","type":"INTERNAL_ACCOUNT.BALANCE_UPDATED","timestamp":"2026-","data":{"id":"InternalAccount:","type":"INTERNAL_FIAT","status":"ACTIVE","balance":{"amount":,"currency":{"code":"USD","name":"United States Dollar","symbol":"$","decimals":2}},"totalBalance":{"amount":,"currency":{"code":"USD","name":"United States Dollar","symbol":"$","decimals":2}},',
    '"createdAt":"2026-","updatedAt":"2026-","customerId":"Customer:"}}',
    '{"id":"Webhook:","type":"OUTGOING_PAYMENT.PENDING","timestamp":"2026-","data":{"id":"Transaction:","direction":"DEBIT","source":{"sourceType":"ACCOUNT","accountId":"InternalAccount:","currency":"USD"},"destination":{"destinationType":"ACCOUNT","accountId":"ExternalAccount:","currency":"USD"},"customerId":"Customer:","platformCustomerId":"cust_","createdAt":"2026-","updatedAt":"2026-","exchangeRate":1,"quoteId":"Quote:","settledAt":"2026-","status":"PROCESSING","type":"OUTGOING","sentAmount":{"amount":,"currency":{"code":"USD","name":"United States Dollar","symbol":"$","decimals":2}},"fees":0,"platformFees":0,"paymentRail":"ACH","receivedAmount":{"amount":,"currency":{"code":"USD","name":"United States Dollar","symbol":"$","decimals":2}},"rateDetails":{"counterpartyMultiplier":1,"counterpartyFixedFee":0,"gridApiMultiplier":1,"gridApiFixedFee":0,"gridApiVariableFeeRate":0,"gridApiVariableFeeAmount":0},"railSelectionMode":"AUTO","expectedSettlementAt":null,"settlementTimelineSeconds":1}}',
    '"OUTGOING_PAYMENT.COMPLETED","status":"COMPLETED","OUTGOING_PAYMENT.PROCESSING"',
  ].join(''),
  'utf8',
);

const DICTIONARIES: Record<number, Buffer> = { [V1]: DICTIONARY_V1 };

/** The dictionary's size (it must stay within the window less DEFLATE's 262-byte lookahead). */
export const DICTIONARY_V1_BYTES = DICTIONARY_V1.length;

// A 4 KB window (the dictionary fits in it; a payload rarely refers further back) and a small
// hash: setting up a default 32 KB stream per event cost three times the compression itself.
const WINDOW_BITS = 12;
const MEM_LEVEL = 4;

/** The stored form of a payload's JSON text. */
export function packPayload(json: string): Buffer {
  const packed = deflateRawSync(json, { dictionary: DICTIONARY_V1, level: 3, windowBits: WINDOW_BITS, memLevel: MEM_LEVEL });
  const out = Buffer.allocUnsafe(packed.length + 1);
  out[0] = V1;
  packed.copy(out, 1);
  return out;
}

/** The payload's JSON text from its stored form. */
export function unpackPayload(body: Uint8Array): string {
  const dictionary = DICTIONARIES[body[0]!];
  if (!dictionary) throw new Error(`event body of unknown version ${body[0]}`);
  return inflateRawSync(body.subarray(1), { dictionary, windowBits: WINDOW_BITS }).toString('utf8');
}

/** An event row's payload as JSON text, whichever way it was stored. */
export function payloadText(row: { payload: string; body?: Uint8Array | null }): string {
  return row.body ? unpackPayload(row.body) : row.payload;
}
