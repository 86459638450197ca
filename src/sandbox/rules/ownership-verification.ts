// Sandbox constants of wallet ownership verification (the EU Travel Rule's check that a
// self-custody wallet belongs to the customer). See docs/sandbox.md, "External accounts".

/**
 * The regulatory threshold, in US cents: a transfer to a wallet still
 * PENDING_OWNERSHIP_VERIFICATION is allowed when its USD value is below this amount and
 * needs verification (400 EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED) at or above it. It
 * mirrors the EU Transfer of Funds Regulation's EUR 1,000 for self-hosted wallets, taken
 * as USD 1,000.00 in the sandbox. An UNVERIFIED wallet (its last attempt failed) needs
 * verification whatever the amount.
 */
export const OWNERSHIP_VERIFICATION_THRESHOLD_USD_CENTS = 100_000;

/** How long a WALLET_SIGNATURE challenge's message can be signed and submitted. */
export const WALLET_SIGNATURE_CHALLENGE_TTL_MS = 15 * 60_000;

/** How long a LIVENESS challenge's hosted page stays open. */
export const LIVENESS_CHALLENGE_TTL_MS = 30 * 60_000;

/**
 * The legacy fixed sandbox signature: POST …/verify accepts it for any outstanding
 * WALLET_SIGNATURE challenge, of any chain, without cryptographic verification (kept for
 * integrations written before real verification). Every other value is verified.
 */
export const LEGACY_SANDBOX_OWNERSHIP_SIGNATURE = 'SANDBOX_VALID_SIGNATURE';

/** The exact message a wallet signs; every line is part of what is signed. */
export function ownershipMessage(p: { address: string; accountId: string; nonce: string; issuedAt: string; expiresAt: string }): string {
  return [
    'Payments Service wallet ownership verification',
    '',
    'I confirm that I control this wallet.',
    '',
    `Address: ${p.address}`,
    `External account: ${p.accountId}`,
    `Nonce: ${p.nonce}`,
    `Issued at: ${p.issuedAt}`,
    `Expires at: ${p.expiresAt}`,
  ].join('\n');
}
