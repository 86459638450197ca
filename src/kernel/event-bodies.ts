import { constants, createDeflateRaw, createInflateRaw, deflateRawSync, inflateRawSync, type DeflateRaw, type InflateRaw } from 'node:zlib';

// How an event's payload is stored (issue 15: bytes per payment flow). Each event keeps the
// resource as it was when the event happened, so every payload is stored, once, in the
// event's own row; deliveries point at the event and never copy it. The payload is kept as
// raw DEFLATE (node:zlib) against a preset dictionary of what webhook payloads share: field
// names, currency objects, statuses, the sandbox's funding-instruction text. A payment
// flow's event shrinks from about 1.3 KB of JSON to under 200 bytes; what remains is mostly
// the ids and timestamps, which no dictionary can predict.
//
// Format of `events.body`: one version byte, then the compressed UTF-8 JSON (or, version 3, the text). Version 1 uses
// DICTIONARY_V1 below, a 4 KB window (windowBits 12) and memLevel 4. Version 2 (what is
// written now) adds the row's own values to the dictionary's end: its time, resource id and
// event id, which every payload repeats (`timestamp`, `data.id`, `id`) and which the row
// keeps anyway, so they cost a back-reference instead of about 20 bytes each (about 50
// bytes per event; issue 15). A dictionary can never change once rows are written with it:
// a new one gets a new version byte, and the old stays here to read old rows. Rows written
// before bodies existed have `body` NULL and the JSON in `payload`; all read through
// `payloadText`, given the row.
//
// Version 3 (`textBody`, issue 35) is not compressed: the UTF-8 JSON with the row's own
// values (time, resource id, event id) replaced by the bytes 0x01, 0x02 and 0x03, which JSON
// text never holds raw (JSON.stringify escapes every control character). Setting up a zlib
// stream and its dictionary is most of packing's cost (about 40 µs for a customer's status
// event, a tenth of a `POST /customers`); version 3 costs about 1 µs for about three times
// the bytes (a customer's event: about 330 instead of 130), so it is for events whose
// writer's CPU counts more than their bytes (the emitter asks for it: DomainEvent.packed).
//
// Version 4 (what `packPayload` writes since issue 35's seventh pass) packs version 3's text
// (the row's values elided to one byte each) against DICTIONARY_V1 alone, with version 1's
// window and hash. Its dictionary is the same for every row, so one zlib stream is kept and
// reset between events instead of one set up per event (`KeptStream` below): packing a
// payment's event costs about half as much, and the row's values cost one byte each instead
// of a back-reference. Bodies of versions 1, 2 and 3 are still read.

const V1 = 1;
const V2 = 2;
const V3 = 3;
const V4 = 4;
const V5 = 5;

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

/** A copy of DICTIONARY_V1 (for tests: version 4 is DEFLATE against it alone). */
export function dictionaryV1(): Buffer {
  return Buffer.from(DICTIONARY_V1);
}

/** The dictionary's size (it must stay within the window less DEFLATE's 262-byte lookahead). */
export const DICTIONARY_V1_BYTES = DICTIONARY_V1.length;

// A 4 KB window (the dictionary fits in it; a payload rarely refers further back) and a small
// hash: setting up a default 32 KB stream per event cost three times the compression itself.
const WINDOW_BITS = 12;
const MEM_LEVEL = 4;
/** The most dictionary the window can use. */
const MAX_DICTIONARY = (1 << WINDOW_BITS) - 262;

/**
 * zlib's output buffer for packing (`chunkSize`; Node's default is 16 KB): a payment event
 * packs to about 200 bytes, and a 16 KB buffer is a new allocation outside Buffer's pool per
 * event (issue 35). A longer output takes more chunks, joined: the bytes are the same.
 */
const OUT_CHUNK = 1024;

/** The values of an event's row that version 2 adds to the dictionary. */
export interface EventRowKeys {
  id: string;
  resource_id: string;
  created_at: string;
}

/** Version 2's dictionary for one row: DICTIONARY_V1's tail, then the row's values. */
function dictionaryV2(row: EventRowKeys): Buffer {
  const own = ownValues(row);
  // The common case (the row's values fit after the whole of DICTIONARY_V1): written into a
  // buffer kept for it, which already holds DICTIONARY_V1, instead of two new buffers and a
  // concatenation per event (issue 35). zlib copies the dictionary when its stream is set
  // up, and packing and unpacking are synchronous, so the next call may overwrite it.
  // (`write` stops before a character that does not fit: then the old way, which keeps less of DICTIONARY_V1.)
  const n = scratch.write(own, DICTIONARY_V1.length, 'utf8');
  if (n === Buffer.byteLength(own, 'utf8')) return scratch.subarray(0, DICTIONARY_V1.length + n);
  const bytes = Buffer.from(own, 'utf8');
  const keep = Math.max(0, Math.min(DICTIONARY_V1.length, MAX_DICTIONARY - bytes.length));
  return Buffer.concat([DICTIONARY_V1.subarray(DICTIONARY_V1.length - keep), bytes]);
}

/** The row's values as version 2's dictionary ends with them. */
function ownValues(row: EventRowKeys): string {
  return `"${row.created_at}","${row.resource_id}","${row.id}"`;
}

/** DICTIONARY_V1, then room for a row's values (dictionaryV2). */
const scratch = Buffer.alloc(MAX_DICTIONARY);
DICTIONARY_V1.copy(scratch, 0);

/**
 * A zlib stream kept for many one-shot calls (issue 35): `deflateRawSync` and
 * `inflateRawSync` set up a new stream per call (a stream object, zlib's state, the
 * dictionary), which cost more than compressing a 300-byte event. Node's public API has no
 * synchronous call on an existing stream, so this drives the stream's native handle the way
 * `deflateRawSync` itself does (`writeSync` with `Z_FINISH` into an output buffer, the
 * counts left in the stream's write state), then resets it (`reset` also sets the
 * dictionary again). The output is the same bytes a one-shot call gives (tested). `run`
 * answers undefined, and the caller makes the one-shot call, whenever it cannot vouch for
 * the result: the handle is not there (another Node), zlib reported an error (the stream is
 * then dropped, a new one made next time), the input was not all read or the output filled
 * the buffer.
 */
class KeptStream {
  private stream: DeflateRaw | InflateRaw | undefined;
  private handle: ZlibHandle | undefined;
  private state: Uint32Array | undefined;
  private unavailable = false;

  constructor(private readonly open: () => DeflateRaw | InflateRaw) {}

  run(input: Uint8Array, length: number, out: Buffer): Buffer | undefined {
    if (!this.handle && !this.make()) return undefined;
    const handle = this.handle!;
    const state = this.state!;
    try {
      handle.writeSync(constants.Z_FINISH, input, 0, length, out, 0, out.length);
    } catch {
      this.drop();
      return undefined;
    }
    // An error is reported through the stream, which destroys it (and its handle).
    if (this.stream!.destroyed) {
      this.drop();
      return undefined;
    }
    const availOut = state[0]!;
    const availIn = state[1]!;
    handle.reset();
    if (availIn !== 0 || availOut === 0) return undefined;
    return Buffer.from(out.subarray(0, out.length - availOut));
  }

  private make(): boolean {
    if (this.unavailable) return false;
    const stream = this.open();
    const inner = stream as unknown as { _handle?: Partial<ZlibHandle>; _writeState?: unknown };
    const handle = inner._handle;
    const state = inner._writeState;
    if (!handle || typeof handle.writeSync !== 'function' || typeof handle.reset !== 'function' || !(state instanceof Uint32Array) || state.length < 2) {
      this.unavailable = true;
      stream.close();
      return false;
    }
    // zlib's errors arrive as an 'error' event after the call; run has already answered.
    stream.on('error', () => {});
    this.stream = stream;
    this.handle = handle as ZlibHandle;
    this.state = state;
    return true;
  }

  private drop(): void {
    const stream = this.stream;
    this.stream = this.handle = this.state = undefined;
    if (stream && !stream.destroyed) stream.close();
  }
}

interface ZlibHandle {
  writeSync(flush: number, input: Uint8Array, inOff: number, inLen: number, out: Uint8Array, outOff: number, outLen: number): void;
  reset(): void;
}

const V4_OPTIONS = { dictionary: DICTIONARY_V1, level: 3, windowBits: WINDOW_BITS, memLevel: MEM_LEVEL, chunkSize: OUT_CHUNK };
const deflater = new KeptStream(() => createDeflateRaw(V4_OPTIONS));
const inflater = new KeptStream(() => createInflateRaw({ dictionary: DICTIONARY_V1, windowBits: WINDOW_BITS }));
/** The elided text's bytes (version 4's input), then zlib's output: kept, not allocated per event. */
const packIn = Buffer.alloc(32 * 1024);
const zlibOut = Buffer.alloc(64 * 1024);

/** The stored form of a payload's JSON text, for the event row `row` (version 4; version 2 when the text or a row value holds a marker byte raw, or a row value is empty). */
export function packPayload(json: string, row: EventRowKeys): Buffer {
  if (!elidesV4(json, row)) return packPayloadV2(json, row);
  const elided = elideV4(json, row);
  // A UTF-8 character is at most 4 bytes: written up to 4 bytes short of the end, nothing was cut.
  const n = packIn.write(elided, 0, 'utf8');
  const packed = (n <= packIn.length - 4 ? deflater.run(packIn, n, zlibOut) : undefined) ?? deflateRawSync(elided, V4_OPTIONS);
  const out = Buffer.allocUnsafe(packed.length + 1);
  out[0] = V4;
  packed.copy(out, 1);
  return out;
}

/** Version 2: the whole text against DICTIONARY_V1's tail and the row's values. */
export function packPayloadV2(json: string, row: EventRowKeys): Buffer {
  const packed = deflateRawSync(json, { dictionary: dictionaryV2(row), level: 3, windowBits: WINDOW_BITS, memLevel: MEM_LEVEL, chunkSize: OUT_CHUNK });
  const out = Buffer.allocUnsafe(packed.length + 1);
  out[0] = V2;
  packed.copy(out, 1);
  return out;
}

/** The text with the row's values as the bytes 0x01 (time), 0x02 (resource id), 0x03 (event id): versions 3 and 4. */
function elide(json: string, row: EventRowKeys): string {
  return json.replaceAll(row.created_at, '\u0001').replaceAll(row.resource_id, '\u0002').replaceAll(row.id, '\u0003');
}

/**
 * Version 4: version 3's elision, then the row's time to the minute (0x04: the payload's other
 * times are mostly of the same minute) and the first 9 characters of its event id's uuid
 * (0x05: the time part every id made in the same minute shares). Version 2 had these in its
 * dictionary, as part of the row's values; a fixed dictionary does not.
 */
function elideV4(json: string, row: EventRowKeys): string {
  return elide(json, row).replaceAll(minuteOf(row), '\u0004').replaceAll(idTimeOf(row), '\u0005');
}

function restoreV4(text: string, row: EventRowKeys): string {
  return restore(text.split('\u0005').join(idTimeOf(row)).split('\u0004').join(minuteOf(row)), row);
}

/** Whether version 4 can elide: no marker byte in the text or the row's values, and none of the values empty. */
function elidesV4(json: string, row: EventRowKeys): boolean {
  if (!row.created_at || !row.resource_id || !row.id || !minuteOf(row) || !idTimeOf(row)) return false;
  return !MARKERS_V4.test(json) && !MARKERS_V4.test(row.created_at) && !MARKERS_V4.test(row.resource_id) && !MARKERS_V4.test(row.id);
}

const minuteOf = (row: EventRowKeys): string => row.created_at.slice(0, 16);
const idTimeOf = (row: EventRowKeys): string => {
  const colon = row.id.indexOf(':');
  return row.id.slice(colon + 1, colon + 10);
};

/** Versions 3 and 4: the row's values put back. */
function restore(text: string, row: EventRowKeys): string {
  // split and join: a replacement string would read `$` in a value as a pattern.
  return text.split('\u0003').join(row.id).split('\u0002').join(row.resource_id).split('\u0001').join(row.created_at);
}

/**
 * The stored form of a payload's JSON text for the event row `row`, uncompressed (version 3):
 * the row's values elided. Packed (version 2) instead when the text holds a byte version 3
 * uses as a marker (no JSON.stringify output does) or a row value is empty.
 */
export function textBody(json: string, row: EventRowKeys): Buffer {
  if (MARKERS.test(json) || !row.created_at || !row.resource_id || !row.id) return packPayloadV2(json, row);
  const elided = elide(json, row);
  const out = Buffer.allocUnsafe(Buffer.byteLength(elided, 'utf8') + 1);
  out[0] = V3;
  out.write(elided, 1, 'utf8');
  return out;
}

const MARKERS = /[\u0001-\u0003]/;
const MARKERS_V4 = /[\u0001-\u0005]/;

// Version 5 (issue 35, PostgreSQL's late balance moves, kernel/db/late-move.ts): a body whose
// few figures the database fills in when it writes the row. The version byte, the length of
// the inner body (4 bytes, big-endian), the inner body (any version above, packed from the
// text with each stand-in figure replaced by the byte 0x06 + its index), then the figures in
// ASCII, separated by commas, as the database appends them (`v.body || convert_to(…)`).
const LATE_MARK = 0x06;

/**
 * Version 5's stored form before the database appends the figures: `json` with each of
 * `standIns` (written by JSON.stringify as a number) replaced by its marker. Undefined when
 * the text shows none of them, or holds a marker byte raw (no JSON.stringify output does).
 */
export function lateTemplate(json: string, row: EventRowKeys, standIns: readonly number[]): Buffer | undefined {
  if (!standIns.some((v) => json.includes(String(v))) || /[\u0006-\u000f]/.test(json)) return undefined;
  let text = json;
  standIns.forEach((v, i) => (text = text.split(String(v)).join(String.fromCharCode(LATE_MARK + i))));
  const inner = packPayload(text, row);
  const out = Buffer.allocUnsafe(5 + inner.length);
  out[0] = V5;
  out.writeUInt32BE(inner.length, 1);
  inner.copy(out, 5);
  return out;
}

/** Version 5 with its figures appended (what the database writes; tests and SQLite's reads of such rows use it too). */
export function lateFilled(template: Buffer, figures: readonly number[]): Buffer {
  return Buffer.concat([template, Buffer.from(figures.join(','), 'utf8')]);
}

/** The payload's JSON text from its stored form (`row`: the event row it is stored in). */
export function unpackPayload(body: Uint8Array, row?: EventRowKeys): string {
  let dictionary: Buffer;
  if (body[0] === V5) {
    const b = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
    const n = b.readUInt32BE(1);
    const figures = b.subarray(5 + n).toString('utf8').split(',');
    let text = unpackPayload(b.subarray(5, 5 + n), row);
    figures.forEach((f, i) => (text = text.split(String.fromCharCode(LATE_MARK + i)).join(f)));
    return text;
  }
  if (body[0] === V3) {
    if (!row) throw new Error('an event body of version 3 reads only with its row');
    return restore(Buffer.from(body.buffer, body.byteOffset + 1, body.byteLength - 1).toString('utf8'), row);
  }
  if (body[0] === V4) {
    if (!row) throw new Error('an event body of version 4 reads only with its row');
    const input = body.subarray(1);
    const text = inflater.run(input, input.length, zlibOut) ?? inflateRawSync(input, { dictionary: DICTIONARY_V1, windowBits: WINDOW_BITS });
    return restoreV4(text.toString('utf8'), row);
  }
  if (body[0] === V1) dictionary = DICTIONARY_V1;
  else if (body[0] === V2) {
    if (!row) throw new Error('an event body of version 2 reads only with its row');
    dictionary = dictionaryV2(row);
  } else throw new Error(`event body of unknown version ${body[0]}`);
  return inflateRawSync(body.subarray(1), { dictionary, windowBits: WINDOW_BITS }).toString('utf8');
}

/** An event row's payload as JSON text, whichever way it was stored. */
export function payloadText(row: { payload: string; body?: Uint8Array | null } & Partial<EventRowKeys>): string {
  if (!row.body) return row.payload;
  const keys = row.id !== undefined && row.resource_id !== undefined && row.created_at !== undefined ? { id: row.id, resource_id: row.resource_id, created_at: row.created_at } : undefined;
  return unpackPayload(row.body, keys);
}
