import type { FieldConstraint } from '../../kernel/errors.js';
import { FORMATS } from '../../kernel/formats.js';

// The identification vocabulary individual customers and beneficial owners share:
// idType, identifier and countryOfIssuance. An individual's identifier is write-only and kept
// as its last 4 characters; a beneficial owner's is also kept in full, sealed, and returned.

const ITIN = /^9\d{2}-?(5\d|6[0-5]|7\d|8[0-8]|9[0-24-9])-?\d{4}$/;
export const PERSON_ID_TYPES = ['SSN', 'ITIN', 'NON_US_TAX_ID'];

export interface IdentificationInput {
  idType?: string | undefined;
  identifier?: string | undefined;
  countryOfIssuance?: string | undefined;
}

type Add = (field: string, message: string, constraint: FieldConstraint) => void;

/**
 * Rules JSON schema cannot say, for a person: the identifier against its idType (SSN, ITIN),
 * EIN refused (it identifies a business), and where SSN/ITIN and foreign tax ids are issued.
 * `existing` is what is stored (for partial updates); fields are reported as `${prefix}field`.
 */
export function checkIdentification(input: IdentificationInput, existing: IdentificationInput | undefined, prefix: string, add: Add): void {
  const idType = input.idType ?? existing?.idType;
  if (input.idType === 'EIN') add(`${prefix}idType`, 'EIN identifies a business; a person uses SSN, ITIN or NON_US_TAX_ID', { enum: PERSON_ID_TYPES });
  if (input.identifier !== undefined) {
    if (idType === undefined) add(`${prefix}idType`, 'is required when identifier is given', { enum: PERSON_ID_TYPES });
    else if (idType === 'SSN' && !FORMATS['us-ssn']!(input.identifier)) add(`${prefix}identifier`, 'must be a US Social Security number (AAA-GG-SSSS)', { format: 'us-ssn' });
    else if (idType === 'ITIN' && !ITIN.test(input.identifier)) add(`${prefix}identifier`, 'must be a US ITIN: nine digits starting with 9', { pattern: ITIN.source });
  }
  const issuance = input.countryOfIssuance ?? existing?.countryOfIssuance;
  if ((idType === 'SSN' || idType === 'ITIN') && issuance !== undefined && issuance !== 'US') {
    add(`${prefix}countryOfIssuance`, `must be US for ${idType}`, { enum: ['US'] });
  }
  if (idType === 'NON_US_TAX_ID' && input.idType !== undefined && (issuance === undefined || issuance === 'US')) {
    add(`${prefix}countryOfIssuance`, 'is required for NON_US_TAX_ID and must not be US', { format: 'iso3166-1-alpha-2' });
  }
}

/**
 * How a beneficial owner's identifier is shown when only its last 4 are at hand (an owner
 * recorded before the full number was kept, or a number sealed with a data key this process
 * does not have): the rest is masked, `***-**-6789` for SSN and ITIN, otherwise as the
 * reference masks account identifiers (`****6789`).
 */
export function maskedIdentifier(idType: string | undefined, last4: string | undefined): string {
  const tail = last4 ?? '';
  return idType === 'SSN' || idType === 'ITIN' ? `***-**-${tail}` : `****${tail}`;
}

/** What is stored of an identifier: its last 4 letters or digits. */
export function identifierLast4(identifier: string): string {
  return identifier.replace(/[^0-9A-Za-z]/g, '').slice(-4);
}
