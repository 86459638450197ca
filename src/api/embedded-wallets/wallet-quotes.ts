import type { Kysely, Transaction } from 'kysely';
import type { DB } from '../../kernel/db/schema.js';
import { apiError, invalidInput } from '../../kernel/errors.js';
import { findAccount } from '../internal-accounts/store.js';
import { findQuote, type QuoteRow } from '../quotes/store.js';
import { sha256Hex } from './crypto.js';
import type { SignedRequestChallenge } from './schemas.js';
import * as store from './store.js';
import type { WalletRow } from './store.js';
import type { Now, SignedHeaders, WalletDeps } from './service.js';
import { type Pending, challengeOf, checkSignature, issue, legOf, retry } from './signed-retry.js';

// Quotes funded from a wallet: the payment instructions to sign and the signature before execution.

type Db = Kysely<DB> | Transaction<DB>;

// ---- Quotes from a wallet -----------------------------------------------------------------------

/**
 * The paymentInstructions of a quote whose source is an embedded wallet (null for any other
 * source): the transaction payload the wallet's session key stamps for execute. Such a quote
 * cannot be executed at creation (the payload only exists in its answer).
 */
export async function walletQuoteInstructions(db: Db, platformId: string, nowMs: number, q: { quoteId: string; sourceAccountId: string; amount: number; currency: string; destination: string; immediatelyExecute: boolean; field: string }): Promise<string | null> {
  // Only an EMBEDDED_WALLET account has a wallet (provisioning.ts writes both together): the
  // account is cached (internal-accounts/store.ts), so a payment from any other account
  // asks embedded_wallets nothing (issue 35).
  if ((await findAccount(db, platformId, q.sourceAccountId))?.type !== 'EMBEDDED_WALLET') return null;
  const wallet = await store.findWallet(db, platformId, q.sourceAccountId);
  if (!wallet) return null;
  if (q.immediatelyExecute) {
    // Executed at creation (immediatelyExecute, or a deprecated transfer): no payload could have been signed.
    throw invalidInput([{ field: q.field, message: 'cannot execute at once from an EMBEDDED_WALLET source: create the quote, then execute it with the wallet signature over its payloadToSign' }]);
  }
  const payloadToSign = JSON.stringify({
    type: 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2',
    timestampMs: String(nowMs),
    organizationId: wallet.organization_id,
    parameters: { signWith: wallet.wallet_address, unsignedTransaction: sha256Hex(`${q.quoteId}|${q.amount}|${q.currency}|${q.destination}`), type: 'TRANSACTION_TYPE_SPARK' },
    generateAppProofs: true,
  });
  return JSON.stringify([
    {
      instructionsNotes: 'Stamp payloadToSign byte for byte with a session key of the wallet and send the stamp as Service-Wallet-Signature on POST /quotes/{quoteId}/execute',
      accountOrWalletInfo: { accountType: 'EMBEDDED_WALLET', payloadToSign },
    },
  ]);
}

/** The payloadToSign of a quote from an embedded wallet that is still open, with its wallet; undefined for any other quote. */
async function walletQuotePayload(db: Db, platformId: string, nowMs: number, quote: QuoteRow): Promise<{ wallet: WalletRow; payload: string } | undefined> {
  if (quote.source_account_id === null || quote.payment_instructions === null || quote.status !== 'PENDING' || Number(quote.expires_at_ms) <= nowMs) return undefined;
  const wallet = await store.findWallet(db, platformId, quote.source_account_id);
  if (!wallet) return undefined;
  const payload = (JSON.parse(quote.payment_instructions) as Array<{ accountOrWalletInfo: { payloadToSign?: string } }>)[0]?.accountOrWalletInfo.payloadToSign;
  return payload === undefined ? undefined : { wallet, payload };
}

/** The consent check itself, in the caller's transaction (see authorizeWalletExecute). */
async function walletExecuteConsent(trx: Db, platformId: string, now: Now, quote: QuoteRow, w: { wallet: WalletRow; payload: string }, h: SignedHeaders): Promise<SignedRequestChallenge | null> {
  const p: Pending = { kind: 'EXECUTE_QUOTE', accountId: w.wallet.account_id, targetId: quote.id, body: {} };
  const sig = h.signature?.trim() || undefined;
  const rid = h.requestId?.trim() || undefined;
  if (sig && !rid) {
    if (await store.pendingRequestFor(trx, platformId, quote.id, 'EXECUTE_QUOTE', now.ms)) {
      throw apiError(401, 'REQUEST_ID_MISSING', 'The signed retry needs the Request-Id of the 202 answer');
    }
    await checkSignature(trx, platformId, now, sig, w.payload, w.wallet.account_id, { kind: 'session' }, {});
    return null;
  }
  if (legOf(h) === 'first') return challengeOf(await issue(trx, platformId, now, p, w.payload, {}, Math.max(1, Number(quote.expires_at_ms) - now.ms)));
  await retry(trx, platformId, now, h, p, { kind: 'session' });
  return null;
}

/**
 * The wallet's consent to execute a quote from an embedded wallet (the execute route calls
 * this first): null when the quote needs none or the signature is good; a challenge (202)
 * for a call without signature headers. A signature without Request-Id is taken over the
 * quote's own payloadToSign, unless a 202 was issued for the quote (then its Request-Id is needed).
 */
export async function authorizeWalletExecute(deps: WalletDeps, platformId: string, now: Now, quoteId: string, h: SignedHeaders): Promise<SignedRequestChallenge | null> {
  // Most quotes are not from a wallet: answered from two reads, no transaction.
  const quote = await findQuote(deps.store.db, platformId, quoteId);
  const w = quote ? await walletQuotePayload(deps.store.db, platformId, now.ms, quote) : undefined;
  if (!quote || !w) return null;
  return deps.store.db.transaction().execute((trx) => walletExecuteConsent(trx, platformId, now, quote, w, h));
}

/**
 * The same consent inside the caller's transaction, for a quote it already holds (an agent's
 * execute: checked after its policy allowed the action and before the decision takes effect,
 * so a held action was signed at submission). A challenge issued here must be committed.
 */
export async function authorizeWalletExecuteIn(trx: Transaction<DB>, platformId: string, now: Now, quote: QuoteRow, h: SignedHeaders): Promise<SignedRequestChallenge | null> {
  const w = await walletQuotePayload(trx, platformId, now.ms, quote);
  return w ? walletExecuteConsent(trx, platformId, now, quote, w, h) : null;
}
