// Named formats used in schemas. Their names are the FieldConstraint `format` slugs the
// specification lists, so a failed check reports e.g. {format: "e.164"} as is.
import { CURRENCIES } from './currencies.js';

export const COUNTRY_CODES = new Set(
  (
    'AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV BW BY BZ ' +
    'CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR ' +
    'GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO ' +
    'JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR ' +
    'MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO ' +
    'RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV ' +
    'TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS YE YT ZA ZM ZW'
  ).split(' '),
);

function isCalendarDate(s: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s);
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  // setUTCFullYear, not Date.UTC: Date.UTC maps years 0 to 99 onto 1900 to 1999.
  const dt = new Date(0);
  dt.setUTCFullYear(y, mo - 1, d);
  return dt.getUTCFullYear() === y && dt.getUTCMonth() === mo - 1 && dt.getUTCDate() === d;
}

function isDateTime(s: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/i.test(s)) return false;
  return isCalendarDate(s.slice(0, 10)) && !Number.isNaN(Date.parse(s));
}

function isHttpUrl(s: string): boolean {
  try {
    const u = new URL(s);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname.length > 0;
  } catch {
    return false;
  }
}

function isUsSsn(s: string): boolean {
  // AAA-GG-SSSS or AAAGGSSSS: both dashes or neither.
  const m = /^(\d{3})(-?)(\d{2})\2(\d{4})$/.exec(s);
  if (!m) return false;
  const [area, group, serial] = [m[1]!, m[3]!, m[4]!];
  return area !== '000' && area !== '666' && area[0] !== '9' && group !== '00' && serial !== '0000';
}

export const FORMATS: Record<string, (s: string) => boolean> = {
  date: isCalendarDate,
  'date-time': isDateTime,
  email: (s) => /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(s) && s.length <= 254,
  url: isHttpUrl,
  uri: isHttpUrl,
  tel: (s) => /^\+?[0-9 ()-]{4,20}$/.test(s),
  'e.164': (s) => /^\+[1-9]\d{6,14}$/.test(s),
  'iso3166-1-alpha-2': (s) => COUNTRY_CODES.has(s),
  'iso4217': (s) => CURRENCIES.has(s),
  'us-ssn': isUsSsn,
  'bcp47-language-tag': (s) => /^[a-zA-Z]{2,3}(-[a-zA-Z0-9]{2,8})*$/.test(s),
  hostname: (s) => /^(?=.{1,253}$)([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)(\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$/.test(s),
  uuid: (s) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s),
};

const FORMAT_WORDS: Record<string, string> = {
  date: 'a calendar date (YYYY-MM-DD)',
  'date-time': 'an ISO 8601 date-time',
  email: 'an email address',
  url: 'an http(s) URL',
  uri: 'an http(s) URL',
  tel: 'a telephone number',
  'e.164': 'a phone number in E.164 form (+ and 7 to 15 digits)',
  'iso3166-1-alpha-2': 'a two-letter ISO 3166-1 country code',
  iso4217: 'a supported currency code',
  'us-ssn': 'a US Social Security number (AAA-GG-SSSS)',
  'bcp47-language-tag': 'a BCP 47 language tag',
  hostname: 'a domain name',
  uuid: 'a UUID',
};

export function formatWords(format: string): string {
  return FORMAT_WORDS[format] ?? `a valid ${format}`;
}
