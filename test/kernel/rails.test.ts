import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { base58, base64, hex } from '@scure/base';
import { describe, expect, it } from 'vitest';
import {
  clabeCheckDigit,
  evmAddressOfPublicKey,
  evmAddressProblem,
  ibanMod97,
  ibanProblem,
  isAbaRoutingNumber,
  isBic,
  isBolt11Invoice,
  isBolt12Offer,
  isBrazilianTaxId,
  isClabe,
  isClabeShape,
  isCnpj,
  isCnpjShape,
  isCpf,
  isCpfShape,
  isE164,
  isLightningAddress,
  isPixKey,
  isSolanaAddress,
  isSparkAddress,
  isTronAddress,
  isUpiVpa,
  sparkAddressOf,
  sparkIdentityKey,
  toEip55,
  tronAddressOfPublicKey,
} from '../../src/kernel/rails.js';
import { fundingInstructions } from '../../src/sandbox/rules/funding-instructions.js';
import {
  bitcoinMessageDigest,
  eip191Digest,
  recoverEip191Address,
  tip191Digest,
  verifyWalletSignature,
} from '../../src/kernel/wallet-signatures.js';

// Pure rail validators and wallet signature checks (no app, no store).

/** An IBAN with correct check digits for a country and BBAN. */
function ibanOf(country: string, bban: string): string {
  const check = 98 - ibanMod97(`${country}00${bban}`);
  return `${country}${String(check).padStart(2, '0')}${bban}`;
}

describe('ABA routing numbers', () => {
  it('accepts real routing numbers and checks the checksum and prefix', () => {
    for (const ok of ['021000021', '026009593', '011000015', '121000358', '322271627']) expect(isAbaRoutingNumber(ok), ok).toBe(true);
    expect(isAbaRoutingNumber('123456789')).toBe(false); // the reference's example: checksum 159
    expect(isAbaRoutingNumber('021000022')).toBe(false); // one digit off
    expect(isAbaRoutingNumber('500000005')).toBe(false); // checksum fine (3·5+7·0+5=20), prefix 50 unassigned
    expect(isAbaRoutingNumber('02100002')).toBe(false);
    expect(isAbaRoutingNumber('02100002a')).toBe(false);
  });
});

describe('IBAN', () => {
  it('accepts valid IBANs of several countries', () => {
    for (const ok of ['DE89370400440532013000', 'GB82WEST12345698765432', 'DK5000400440116243', 'AE070331234567890123456', 'EG380019000500000000263180002', 'PK36SCBL0000001123456702', 'FR1420041010050500013M02606', 'NO9386011117947']) {
      expect(ibanProblem(ok), ok).toBeUndefined();
    }
  });
  it('names the failed check: checksum, length for the country, unknown country, format', () => {
    expect(ibanProblem('DE89370400440532013001')).toBe('checksum');
    expect(ibanProblem('DE8937040044053201300')).toBe('length');
    expect(ibanProblem('US12345678901234567')).toBe('country');
    expect(ibanProblem('DE89 3704')).toBe('format');
    expect(ibanProblem(ibanOf('DE', '37040044053201310'))).toBe('length');
    expect(ibanProblem(ibanOf('DE', '370400440532013102'))).toBeUndefined();
  });
});

describe('CLABE', () => {
  it('checks the weighted check digit', () => {
    expect(isClabe('002010077777777771')).toBe(true);
    expect(isClabe('002010077777777772')).toBe(false);
    expect(isClabe('00201007777777777')).toBe(false);
    expect(clabeCheckDigit('03218000011835971')).toBe(9);
    expect(isClabe('032180000118359719')).toBe(true);
  });
  it('input takes a CLABE by its form: 18 digits, whatever its check digit', () => {
    expect(isClabe('014027000005555601')).toBe(false); // the vendor's sample app
    expect(isClabe('123456789012345678')).toBe(false); // the reference's example
    expect(isClabeShape('014027000005555601')).toBe(true);
    expect(isClabeShape('123456789012345678')).toBe(true);
    expect(isClabeShape('01402700000555560')).toBe(false);
    expect(isClabeShape('0140270000055556012')).toBe(false);
    expect(isClabeShape('01402700000555560A')).toBe(false);
  });
  it('the sandbox funding instructions still carry valid check digits (CLABE, IBAN, ABA)', () => {
    for (let i = 0; i < 50; i++) {
      const accountId = `InternalAccount:0190000${i}-0000-7000-8000-000000000000`;
      const mxn = fundingInstructions({ accountId, currency: 'MXN', isPlatformAccount: false }).map((f) => f.accountOrWalletInfo);
      expect(mxn.length).toBeGreaterThan(0);
      for (const info of mxn) expect(isClabe(info.clabeNumber as string), String(info.clabeNumber)).toBe(true);
      for (const info of fundingInstructions({ accountId, currency: 'EUR', isPlatformAccount: false }).map((f) => f.accountOrWalletInfo)) {
        expect(ibanProblem(info.iban as string)).toBeUndefined();
      }
      for (const info of fundingInstructions({ accountId, currency: 'USD', isPlatformAccount: false }).map((f) => f.accountOrWalletInfo)) {
        if (info.routingNumber !== undefined) expect(isAbaRoutingNumber(info.routingNumber as string)).toBe(true);
      }
    }
  });
});

describe('BIC, E.164, UPI, PIX', () => {
  it('BIC: format and a real country code', () => {
    expect(isBic('DEUTDEFF')).toBe(true);
    expect(isBic('DEUTDEFF500')).toBe(true);
    expect(isBic('DEUTXXFF')).toBe(false);
    expect(isBic('DEUTDEF')).toBe(false);
    expect(isBic('deutdeff')).toBe(false);
  });
  it('E.164: + and a country code not starting with 0, at most 15 digits', () => {
    expect(isE164('+14155550123')).toBe(true);
    expect(isE164('+0123456789')).toBe(false);
    expect(isE164('+1234567890123456')).toBe(false);
    expect(isE164('14155550123')).toBe(false);
  });
  it('UPI VPA: handle@psp', () => {
    expect(isUpiVpa('alice.smith@okaxis')).toBe(true);
    expect(isUpiVpa('9876543210@ybl')).toBe(true);
    expect(isUpiVpa('a@okaxis')).toBe(false);
    expect(isUpiVpa('alice@1bank')).toBe(false);
    expect(isUpiVpa('alice@ok.axis')).toBe(false);
  });
  it('CPF and CNPJ check digits; PIX keys by kind', () => {
    expect(isCpf('52998224725')).toBe(true);
    expect(isCpf('52998224724')).toBe(false);
    expect(isCpf('11111111111')).toBe(false);
    expect(isCnpj('11222333000181')).toBe(true);
    expect(isCnpj('11222333000182')).toBe(false);
    expect(isBrazilianTaxId('52998224725')).toBe(true);
    expect(isBrazilianTaxId('112223330001')).toBe(false);
    expect(isPixKey('CPF', '52998224725')).toBe(true);
    expect(isPixKey('CNPJ', '52998224725')).toBe(false);
    // Input takes CPF and CNPJ by their form: check digits that do not verify are accepted.
    expect(isCpf('12345678901')).toBe(false);
    expect(isCpfShape('12345678901')).toBe(true);
    expect(isPixKey('CPF', '12345678901')).toBe(true);
    expect(isBrazilianTaxId('12345678901')).toBe(true);
    expect(isCnpjShape('11222333000182')).toBe(true);
    expect(isPixKey('CNPJ', '11222333000182')).toBe(true);
    expect(isBrazilianTaxId('11222333000182')).toBe(true);
    expect(isPixKey('CPF', '1234567890')).toBe(false);
    expect(isPixKey('CPF', '1234567890X')).toBe(false);
    expect(isPixKey('CNPJ', '1122233300018')).toBe(false);
    expect(isBrazilianTaxId('1234567890123')).toBe(false);
    expect(isPixKey('EMAIL', 'ana@example.com.br')).toBe(true);
    expect(isPixKey('EMAIL', 'ana')).toBe(false);
    expect(isPixKey('PHONE', '+5511987654321')).toBe(true);
    expect(isPixKey('PHONE', '+14155550123')).toBe(false);
    expect(isPixKey('RANDOM', '123e4567-e89b-12d3-a456-426614174000')).toBe(true);
    expect(isPixKey('RANDOM', 'not-a-uuid')).toBe(false);
  });
});

describe('wallet addresses', () => {
  it('EVM: 0x + 40 hex in one case, or EIP-55 when mixed', () => {
    expect(evmAddressProblem('0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed')).toBeUndefined(); // EIP-55 test vector
    expect(evmAddressProblem('0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed')).toBeUndefined();
    expect(evmAddressProblem('0x5AAEB6053F3E94C9B9A09F33669435E7EF1BEAED')).toBeUndefined();
    expect(evmAddressProblem('0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD')).toBe('checksum');
    expect(evmAddressProblem('0xAbCDEF1234567890aBCdEf1234567890ABcDef12')).toBe('checksum'); // the reference's placeholder
    expect(evmAddressProblem('0x5aaeb6053f3e94c9b9a09f33669435e7ef1bea')).toBe('format');
    expect(toEip55('0xfb6916095ca1df60bb79ce92ce3ea74c37c5d359')).toBe('0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359');
  });
  it('Solana: base58 of 32 bytes', () => {
    expect(isSolanaAddress('4Nd1m6Qkq7RfKuE5vQ9qP9Tn6H94Ueqb4xXHzsAbd8Wg')).toBe(true);
    expect(isSolanaAddress(base58.encode(ed25519.keygen().publicKey))).toBe(true);
    expect(isSolanaAddress(base58.encode(new Uint8Array(31).fill(7)))).toBe(false);
    expect(isSolanaAddress('0Nd1m6Qkq7RfKuE5vQ9qP9Tn6H94Ueqb4xXHzsAbd8Wg')).toBe(false);
  });
  it("Tron: base58check of 0x41 + 20 bytes, 'T…'", () => {
    expect(isTronAddress('TNPeeaaFB7K9cmo4uQpcU32zGK8G1NYqeL')).toBe(true);
    expect(isTronAddress('TNPeeaaFB7K9cmo4uQpcU32zGK8G1NYqeM')).toBe(false);
    expect(isTronAddress(tronAddressOfPublicKey(secp256k1.keygen().publicKey))).toBe(true);
  });
  it('Spark: the identity key inside the address', () => {
    expect(isSparkAddress('spark1pgssyuuuhnrrdjswal5c3s3rafw9w3y5dd4cjy3duxlf7hjzkp0rqx6dj6mrhu')).toBe(true); // the reference's example
    const { publicKey } = secp256k1.keygen();
    const address = sparkAddressOf(publicKey);
    expect(address.startsWith('spark1')).toBe(true);
    expect(hex.encode(sparkIdentityKey(address)!)).toBe(hex.encode(publicKey));
    expect(isSparkAddress('spark1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq')).toBe(false);
    expect(isSparkAddress('bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq')).toBe(false);
  });
  it('Lightning: BOLT 11 (checksum), BOLT 12 offer, Lightning address', () => {
    const invoice =
      'lnbc15u1p3xnhl2pp5jptserfk3zk4qy42tlucycrfwxhydvlemu9pqr93tuzlv9cc7g3sdqsvfhkcap3xyhx7un8cqzpgxqzjcsp5f8c52y2stc300gl6s4xswtjpc37hrnnr3c9wvtgjfuvqmpm35evq9qyyssqy4lgd8tj637qcjp05rdpxxykjenthxftej7a2zzmwrmrl70fyj9hvj0rewhzj7jfyuwkwcg9g2jpwtk3wkjtwnkdks84hsnu8xps5vsq4gj5hs';
    expect(isBolt11Invoice(invoice)).toBe(true);
    expect(isBolt11Invoice(`${invoice.slice(0, -1)}q`)).toBe(false);
    expect(isBolt12Offer('lno1pg257enxv4ezqcneype82um50ynhxgrwdajx283qfwdpl28qqmc78ymlvhmxcsywdk5wrjnj36jryg488qwlrnzyjczs')).toBe(true);
    expect(isLightningAddress('satoshi@wallet.example')).toBe(true);
    expect(isLightningAddress('satoshi@localhost')).toBe(false);
  });
});

describe('wallet signatures', () => {
  const message = 'Payments Service wallet ownership verification\n\nNonce: 00ff';

  it('EIP-191 personal_sign: recovers the signer address', () => {
    const { secretKey, publicKey } = secp256k1.keygen();
    const address = evmAddressOfPublicKey(publicKey);
    const rec = secp256k1.sign(eip191Digest(message), secretKey, { prehash: false, format: 'recovered' });
    const rsv = `0x${hex.encode(rec.slice(1))}${(rec[0]! + 27).toString(16)}`;
    expect(recoverEip191Address(message, rsv)).toBe(address);
    expect(verifyWalletSignature('EIP191', toEip55(address), message, rsv)).toEqual({ ok: true });
    expect(verifyWalletSignature('EIP191', address, `${message}!`, rsv).ok).toBe(false);
    const other = evmAddressOfPublicKey(secp256k1.keygen().publicKey);
    expect(verifyWalletSignature('EIP191', other, message, rsv).ok).toBe(false);
    expect(verifyWalletSignature('EIP191', address, message, '0x1234').ok).toBe(false);
    // v as 0/1 is accepted too
    const rsv01 = `${hex.encode(rec.slice(1))}0${rec[0]!}`;
    expect(verifyWalletSignature('EIP191', address, message, rsv01)).toEqual({ ok: true });
  });

  it('Tron signMessageV2', () => {
    const { secretKey, publicKey } = secp256k1.keygen();
    const rec = secp256k1.sign(tip191Digest(message), secretKey, { prehash: false, format: 'recovered' });
    const sig = `${hex.encode(rec.slice(1))}${(rec[0]! + 27).toString(16)}`;
    expect(verifyWalletSignature('TIP191', tronAddressOfPublicKey(publicKey), message, sig)).toEqual({ ok: true });
    expect(verifyWalletSignature('TIP191', 'TNPeeaaFB7K9cmo4uQpcU32zGK8G1NYqeL', message, sig).ok).toBe(false);
  });

  it('Bitcoin signed message by a Spark identity key (BIP-137 and Electrum headers)', () => {
    const { secretKey, publicKey } = secp256k1.keygen();
    const rec = secp256k1.sign(bitcoinMessageDigest(message), secretKey, { prehash: false, format: 'recovered' });
    const sig = (header: number) => base64.encode(new Uint8Array([header + rec[0]!, ...rec.slice(1)]));
    const address = sparkAddressOf(publicKey);
    expect(verifyWalletSignature('BITCOIN', address, message, sig(31))).toEqual({ ok: true });
    expect(verifyWalletSignature('BITCOIN', address, message, sig(39))).toEqual({ ok: true });
    expect(verifyWalletSignature('BITCOIN', address, message, sig(39), 'electrum').ok).toBe(false);
    expect(verifyWalletSignature('BITCOIN', address, message, sig(31), 'electrum')).toEqual({ ok: true });
    expect(verifyWalletSignature('BITCOIN', sparkAddressOf(secp256k1.keygen().publicKey), message, sig(31)).ok).toBe(false);
  });

  it('Ed25519 (Solana): the address is the public key', () => {
    const { secretKey, publicKey } = ed25519.keygen();
    const sig = base58.encode(ed25519.sign(new TextEncoder().encode(message), secretKey));
    expect(verifyWalletSignature('ED25519', base58.encode(publicKey), message, sig)).toEqual({ ok: true });
    expect(verifyWalletSignature('ED25519', base58.encode(ed25519.keygen().publicKey), message, sig).ok).toBe(false);
    expect(verifyWalletSignature('ED25519', base58.encode(publicKey), message, 'not-base58!').ok).toBe(false);
  });
});
