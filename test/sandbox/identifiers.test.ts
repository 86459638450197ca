import { describe, expect, it } from 'vitest';
import { beneficiaryRule, verifiedHolderName } from '../../src/sandbox/rules/beneficiary-rules.js';
import { primaryIdentifier, primaryIdentifierField, sandboxSuffix, suffixOfIdentifier } from '../../src/sandbox/rules/identifiers.js';

// The one reader of the sandbox's magic digits, and the beneficiary table built on it.

describe('primaryIdentifier', () => {
  it('is the account number, IBAN, CLABE, address or email-style key of each kind', () => {
    expect(primaryIdentifier({ accountType: 'USD_ACCOUNT', accountNumber: '12345678102', routingNumber: '021000021' })).toBe('12345678102');
    expect(primaryIdentifier({ accountType: 'EUR_ACCOUNT', iban: 'DE89370400440532013000' })).toBe('DE89370400440532013000');
    expect(primaryIdentifier({ accountType: 'MXN_ACCOUNT', clabeNumber: '002010077777777771' })).toBe('002010077777777771');
    expect(primaryIdentifier({ accountType: 'ETHEREUM_WALLET', address: '0xabc' })).toBe('0xabc');
    expect(primaryIdentifier({ accountType: 'BRL_ACCOUNT', pixKey: 'ana103@example.com', pixKeyType: 'EMAIL' })).toBe('ana103@example.com');
    expect(primaryIdentifier({ accountType: 'KES_ACCOUNT', phoneNumber: '+254712345104' })).toBe('+254712345104');
    expect(primaryIdentifier({ accountType: 'LIGHTNING', lightningAddress: 'sat106@wallet.example' })).toBe('sat106@wallet.example');
  });
  it('takes the first present field of kinds paid on several rails', () => {
    expect(primaryIdentifierField({ accountType: 'INR_ACCOUNT', vpa: 'alice@okaxis' })).toBe('vpa');
    expect(primaryIdentifierField({ accountType: 'INR_ACCOUNT', accountNumber: '123456789012', ifsc: 'HDFC0001234' })).toBe('accountNumber');
    expect(primaryIdentifierField({ accountType: 'GHS_ACCOUNT', bankName: 'MTN', phoneNumber: '+233241234567' })).toBe('phoneNumber');
    expect(primaryIdentifierField({ accountType: 'SWIFT_ACCOUNT', iban: 'GB82WEST12345698765432' })).toBe('iban');
    expect(primaryIdentifierField({ accountType: 'USD_ACCOUNT' })).toBeUndefined();
  });
});

describe('sandboxSuffix', () => {
  it('is the last 3 digits of the identifier', () => {
    expect(sandboxSuffix({ accountType: 'USD_ACCOUNT', accountNumber: '9876543002' })).toBe('002');
    expect(sandboxSuffix({ accountType: 'EUR_ACCOUNT', iban: 'DE75512108001245126105' })).toBe('105');
    expect(sandboxSuffix({ accountType: 'ETHEREUM_WALLET', address: '0x00000000000000000000000000000000000a1007' })).toBe('007');
  });
  it('for an identifier with a domain part, the digits at the end of the username', () => {
    expect(sandboxSuffix({ accountType: 'INR_ACCOUNT', vpa: 'alice002@okaxis' })).toBe('002');
    expect(suffixOfIdentifier('alice002@bank.example')).toBe('002');
    expect(suffixOfIdentifier('user102@bank.example')).toBe('102');
    expect(suffixOfIdentifier('alice@bank002.example')).toBe('');
  });
  it("is '' when the identifier does not end in 3 digits (any other row)", () => {
    expect(sandboxSuffix({ accountType: 'ETHEREUM_WALLET', address: '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed' })).toBe('');
    expect(suffixOfIdentifier('acct12')).toBe('');
    expect(suffixOfIdentifier(undefined)).toBe('');
    expect(sandboxSuffix({ accountType: 'USD_ACCOUNT' })).toBe('');
  });
});

describe('beneficiary rules', () => {
  it('maps 102…107 and everything else', () => {
    expect(beneficiaryRule('102')).toMatchObject({ status: 'NOT_MATCHED' });
    expect(beneficiaryRule('103')).toMatchObject({ status: 'PARTIAL_MATCH' });
    expect(beneficiaryRule('104')).toMatchObject({ status: 'PENDING' });
    expect(beneficiaryRule('105')).toEqual({ kind: 'invalid-account' });
    expect(beneficiaryRule('106')).toMatchObject({ status: 'UNSUPPORTED' });
    expect(beneficiaryRule('107')).toMatchObject({ status: 'CHECKED_BY_RECEIVING_FI' });
    for (const other of ['', '002', '101', '108', '005']) expect(beneficiaryRule(other)).toMatchObject({ status: 'MATCHED' });
  });
  it('reports the name the bank holds', () => {
    expect(verifiedHolderName(beneficiaryRule('000'), 'John Michael Doe', 'INDIVIDUAL')).toBe('John Michael Doe');
    expect(verifiedHolderName(beneficiaryRule('103'), 'John Michael Doe', 'INDIVIDUAL')).toBe('J. M. Doe');
    expect(verifiedHolderName(beneficiaryRule('102'), 'John Michael Doe', 'INDIVIDUAL')).toBe('Alex Rivera');
    expect(verifiedHolderName(beneficiaryRule('102'), 'Acme Ltd', 'BUSINESS')).toBe('Rivera Trading Ltd');
    expect(verifiedHolderName(beneficiaryRule('104'), 'John Doe', 'INDIVIDUAL')).toBeUndefined();
  });
});
