import type { Readable } from 'node:stream';
import { parse } from 'csv-parse';
import { apiError, type FieldError, invalidInput } from '../../kernel/errors.js';

// The CSV file of a bulk import: read with csv-parse (streaming), its header checked, each
// data row kept as its cells. A row becomes a POST /customers body (rowToBody), and the
// body's field paths are named back as the file's columns (columnOf).

/** Most data rows one file may hold. */
export const MAX_ROWS = 100_000;

const COMMON = [
  'umaAddress', 'platformCustomerId', 'customerType', 'email', 'phoneNumber', 'region', 'currencies',
  'addressLine1', 'addressLine2', 'city', 'state', 'postalCode', 'country',
  // Accepted for the reference's format; not kept (a customer has no such fields).
  'platformAccountId', 'description',
] as const;
const INDIVIDUAL = ['fullName', 'birthDate', 'nationality', 'idType', 'identifier', 'countryOfIssuance'] as const;
const BUSINESS = [
  'businessLegalName', 'businessRegistrationNumber', 'businessTaxId', 'businessCountry', 'businessIncorporatedOn', 'businessEntityType', 'businessDoingBusinessAs',
] as const;
export const KNOWN_COLUMNS: readonly string[] = [...COMMON, ...INDIVIDUAL, ...BUSINESS];

/** Body path → column. */
const ADDRESS: Record<string, string> = { line1: 'addressLine1', line2: 'addressLine2', city: 'city', state: 'state', postalCode: 'postalCode', country: 'country' };
const BUSINESS_INFO: Record<string, string> = {
  legalName: 'businessLegalName',
  registrationNumber: 'businessRegistrationNumber',
  taxId: 'businessTaxId',
  country: 'businessCountry',
  incorporatedOn: 'businessIncorporatedOn',
  entityType: 'businessEntityType',
  doingBusinessAs: 'businessDoingBusinessAs',
};

export interface ParsedFile {
  columns: string[];
  rows: Array<{ line: number; cells: string[] }>;
}

function fileError(message: string, extra: Record<string, unknown> = {}): FieldError & Record<string, unknown> {
  return { field: 'file', message, ...extra };
}

/** Parse the whole file (streamed through csv-parse). A file that is not CSV, or whose header is wrong, is a 400. */
export async function parseCsv(input: Readable): Promise<ParsedFile> {
  const parser = input.pipe(
    parse({ bom: true, skip_empty_lines: true, relax_column_count: true, trim: true, info: true, max_record_size: 64 * 1024 }),
  );
  let columns: string[] | undefined;
  const rows: ParsedFile['rows'] = [];
  try {
    for await (const rec of parser as AsyncIterable<{ record: string[]; info: { lines: number; records: number } }>) {
      if (columns === undefined) {
        columns = rec.record;
        checkHeader(columns);
        continue;
      }
      if (rows.length >= MAX_ROWS) throw invalidInput([fileError(`has more than ${MAX_ROWS} data rows; split it into several uploads`)]);
      // info.lines is the line where the record ends; a quoted value may span lines.
      rows.push({ line: rec.info.lines - countNewlines(rec.record), cells: rec.record });
    }
  } catch (err) {
    input.destroy();
    if (err instanceof Error && 'status' in err) throw err;
    const e = err as { message?: string; lines?: number };
    throw apiError(400, 'INVALID_INPUT', `Invalid input: file is not valid CSV: ${e.message ?? String(err)}`, {
      errors: [fileError(`is not valid CSV: ${e.message ?? String(err)}`, e.lines !== undefined ? { line: e.lines } : {})],
    });
  }
  if (columns === undefined) throw invalidInput([fileError('is empty: it needs a header row and at least one customer row')]);
  if (rows.length === 0) throw invalidInput([fileError('has a header but no customer rows')]);
  return { columns, rows };
}

function countNewlines(cells: string[]): number {
  let n = 0;
  for (const c of cells) for (let i = c.indexOf('\n'); i !== -1; i = c.indexOf('\n', i + 1)) n += 1;
  return n;
}

/** Every problem of the header at once: unknown, repeated or empty names, no customerType. */
function checkHeader(columns: string[]): void {
  const errors: FieldError[] = [];
  const seen = new Set<string>();
  columns.forEach((c, i) => {
    if (c === '') errors.push(fileError(`column ${i + 1} of the header has no name`));
    else if (!KNOWN_COLUMNS.includes(c)) errors.push(fileError(`column "${c}" is not a recognised column (known: ${KNOWN_COLUMNS.join(', ')})`));
    else if (seen.has(c)) errors.push(fileError(`column "${c}" appears twice in the header`));
    seen.add(c);
  });
  if (!seen.has('customerType')) errors.push(fileError('has no customerType column: the header row must name it (INDIVIDUAL or BUSINESS per row)'));
  if (errors.length > 0) throw invalidInput(errors, `Invalid input: the CSV header is not usable (${errors.length} problem${errors.length > 1 ? 's' : ''})`);
}

export interface RowProblem {
  field: string;
  message: string;
}

/**
 * A data row as a POST /customers body, or the row's own problems (its shape, columns of the
 * other customer type). Empty cells are absent fields, and so are missing trailing cells (the
 * reference's own example has a 12-column header and 10-value rows); only more values than
 * columns is a problem of the row.
 */
export function rowToBody(columns: string[], cells: string[]): { body?: Record<string, unknown>; problems: RowProblem[] } {
  if (cells.length > columns.length) {
    return { problems: [{ field: 'row', message: `has ${cells.length} values; the header has only ${columns.length} columns` }] };
  }
  const v: Record<string, string> = {};
  columns.forEach((c, i) => {
    const cell = cells[i];
    if (cell !== undefined && cell !== '') v[c] = cell;
  });
  const problems: RowProblem[] = [];
  const type = v.customerType;
  const body: Record<string, unknown> = {};
  if (type !== undefined) body.customerType = type;
  if (v.umaAddress !== undefined) body.umaAddress = v.umaAddress.startsWith('$') ? v.umaAddress : `$${v.umaAddress}`;
  for (const k of ['platformCustomerId', 'email', 'phoneNumber', 'region'] as const) if (v[k] !== undefined) body[k] = v[k];
  if (v.currencies !== undefined) body.currencies = v.currencies.split(/[;|\s]+/).filter((c) => c !== '');
  if (Object.values(ADDRESS).some((c) => v[c] !== undefined)) {
    const address: Record<string, string> = {};
    for (const [k, c] of Object.entries(ADDRESS)) if (v[c] !== undefined) address[k] = v[c];
    body.address = address;
  }
  if (type === 'BUSINESS') {
    for (const c of INDIVIDUAL) if (v[c] !== undefined) problems.push({ field: c, message: 'is for INDIVIDUAL customers only: leave it empty on a BUSINESS row' });
    const info: Record<string, string> = {};
    for (const [k, c] of Object.entries(BUSINESS_INFO)) if (v[c] !== undefined) info[k] = v[c];
    // The country of incorporation defaults to the address's country.
    if (info.country === undefined && v.country !== undefined) info.country = v.country;
    body.businessInfo = info;
  } else {
    if (type === 'INDIVIDUAL') for (const c of BUSINESS) if (v[c] !== undefined) problems.push({ field: c, message: 'is for BUSINESS customers only: leave it empty on an INDIVIDUAL row' });
    for (const c of INDIVIDUAL) if (v[c] !== undefined) body[c] = v[c];
  }
  return { body, problems };
}

/** The column a field path of the body came from. */
export function columnOf(path: string): string {
  const [head, sub] = path.split('.');
  if (head === 'address') return sub !== undefined ? (ADDRESS[sub] ?? 'addressLine1') : 'addressLine1';
  if (head === 'businessInfo') return sub !== undefined ? (BUSINESS_INFO[sub] ?? 'businessLegalName') : 'businessLegalName';
  if (head === '' || head === undefined) return 'row';
  return head; // currencies.2 → currencies
}
