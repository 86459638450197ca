import { entropyToMnemonic } from '@scure/bip39';
import { wordlist as english } from '@scure/bip39/wordlists/english.js';
import { apiError, invalidInput } from '../../kernel/errors.js';
import { openSealed } from '../../kernel/sealed.js';
import { getInternalAccount } from '../internal-accounts/service.js';
import type { InternalAccount } from '../internal-accounts/schemas.js';
import { exportBundle, hexToBytes, uncompressedKey } from './crypto.js';
import type { InternalAccountUpdateRequest, SignedRequestChallenge } from './schemas.js';
import * as store from './store.js';
import { type Now, type SignedHeaders, type WalletDeps, activity, requirePoint, requireWallet } from './service.js';
import { type Pending, challengeOf, issue, legOf, retry } from './signed-retry.js';

// Signed actions on the wallet's internal account: export (encrypted mnemonic), update.

// ---- Internal account actions -----------------------------------------------------------------

export async function exportWallet(deps: WalletDeps, platformId: string, now: Now, accountId: string, clientPublicKey: string, h: SignedHeaders): Promise<{ challenge: SignedRequestChallenge } | { body: { id: string; encryptedWalletCredentials: string } }> {
  requirePoint(clientPublicKey, 'clientPublicKey');
  return deps.store.db.transaction().execute(async (trx) => {
    const { wallet } = await requireWallet(trx, platformId, accountId, 'id');
    const p: Pending = { kind: 'EXPORT', accountId, targetId: accountId, body: { clientPublicKey } };
    if (legOf(h) === 'first') {
      return { challenge: challengeOf(await issue(trx, platformId, now, p, activity(wallet, 'ACTIVITY_TYPE_EXPORT_WALLET', { targetPublicKey: clientPublicKey, walletId: wallet.wallet_address }, now.ms))) };
    }
    await retry(trx, platformId, now, h, p, { kind: 'session' });
    const seed = openSealed(wallet.mnemonic, `embedded_wallets.mnemonic:${accountId}`);
    if (seed === undefined) throw apiError(500, 'INTERNAL_ERROR', 'The wallet secret can no longer be opened with the server key');
    // The plaintext is the wallet's BIP-39 mnemonic: 24 English words from its 32 bytes of entropy.
    const mnemonic = entropyToMnemonic(hexToBytes(seed), english);
    return { body: { id: accountId, encryptedWalletCredentials: await exportBundle(mnemonic, uncompressedKey(clientPublicKey)!, wallet.organization_id) } };
  });
}

export async function updateWallet(deps: WalletDeps, platformId: string, now: Now, accountId: string, body: InternalAccountUpdateRequest, h: SignedHeaders): Promise<{ challenge: SignedRequestChallenge } | { account: InternalAccount }> {
  if (body.privateEnabled === undefined) throw invalidInput([{ field: 'privateEnabled', message: 'is required: the request changes nothing without it' }]);
  return deps.store.db.transaction().execute(async (trx) => {
    const { wallet } = await requireWallet(trx, platformId, accountId, 'id');
    const p: Pending = { kind: 'UPDATE_ACCOUNT', accountId, targetId: accountId, body };
    if (legOf(h) === 'first') {
      return { challenge: challengeOf(await issue(trx, platformId, now, p, activity(wallet, 'ACTIVITY_TYPE_UPDATE_WALLET', { privateEnabled: body.privateEnabled, walletId: wallet.wallet_address }, now.ms))) };
    }
    await retry(trx, platformId, now, h, p, { kind: 'session' });
    await store.setPrivacy(trx, platformId, accountId, body.privateEnabled!, now.at);
    return { account: await getInternalAccount(trx, platformId, accountId) };
  });
}
