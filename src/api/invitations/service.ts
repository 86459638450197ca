import { randomBytes } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import type { Clock } from '../../kernel/clock.js';
import { iso, platformNowMs } from '../../kernel/clock.js';
import { currencyView } from '../../kernel/currencies.js';
import type { Store } from '../../kernel/db/connect.js';
import { isUniqueViolation } from '../../kernel/db/connect.js';
import type { DB } from '../../kernel/db/schema.js';
import { apiError, invalidInput, notFound } from '../../kernel/errors.js';
import { emitEvent } from '../../kernel/events.js';
import type { JobContext, JobQueue } from '../../kernel/jobs.js';
import { findCustomerByUmaAddress } from '../customers/store.js';
import { platformOptions } from '../../operator/platforms/service.js';
import { findPlatform, type PlatformRow } from '../../operator/platforms/store.js';
import type { UmaInvitation, UmaInvitationCreateRequest } from './schemas.js';
import { findInvitation, insertInvitation, type InvitationsTable, updatePending } from './store.js';

// UMA invitations. The code is the invitation's only key: whoever holds it (any platform of
// this server) can read and claim it, as the link is shared outside the platform; only the
// inviter's platform can cancel it. Expiry is on the inviter's platform clock: a durable job
// at expiresAt marks it EXPIRED (INVITATION.EXPIRED), and a PENDING invitation read after
// expiresAt reads EXPIRED already. A claim moves it to CLAIMED once (a conditional update
// decides between concurrent claims and a cancel) and sends INVITATION.CLAIMED to the
// inviter's platform.

export const EXPIRE_JOB = 'invitations.expire';

export interface InvitationDeps {
  store: Store;
  clock: Clock;
  jobs: JobQueue;
}

type Db = Kysely<DB> | Transaction<DB>;

function nowOfPlatform(clock: Clock, platform: PlatformRow): number {
  return platformNowMs(clock, Number(platform.clock_offset_ms));
}

/** The status as of `nowMs` on the inviter's clock: PENDING past its expiry is EXPIRED. */
function statusAt(row: InvitationsTable, nowMs: number): string {
  if (row.status === 'PENDING' && row.expires_at_ms !== null && nowMs >= Number(row.expires_at_ms)) return 'EXPIRED';
  return row.status;
}

export function invitationView(row: InvitationsTable, nowMs: number): UmaInvitation {
  const v: UmaInvitation = {
    code: row.code,
    createdAt: row.created_at,
    url: row.url,
    inviterUma: row.inviter_uma,
    status: statusAt(row, nowMs) as UmaInvitation['status'],
  };
  if (row.claimed_at) v.claimedAt = row.claimed_at;
  if (row.cancelled_at) v.cancelledAt = row.cancelled_at;
  if (row.expires_at) v.expiresAt = row.expires_at;
  if (row.invitee_uma) v.inviteeUma = row.invitee_uma;
  if (row.first_name) v.firstName = row.first_name;
  if (row.amount_to_send !== null && row.currency) v.amountToSend = { amount: Number(row.amount_to_send), currency: currencyView(row.currency) };
  return v;
}

function requireConfigured(platform: PlatformRow): void {
  if (!platformOptions(platform).invitationsConfigured) {
    throw apiError(400, 'INVITATIONS_NOT_CONFIGURED', `Invitations are not configured for platform ${platform.id}`);
  }
}

export async function createInvitation(deps: InvitationDeps, platform: PlatformRow, now: { ms: number; at: string }, origin: string, body: UmaInvitationCreateRequest): Promise<UmaInvitation> {
  requireConfigured(platform);
  const errors: Array<{ field: string; message: string }> = [];
  let expiresMs: number | null = null;
  if (body.expiresAt !== undefined) {
    expiresMs = Date.parse(body.expiresAt);
    if (!(expiresMs > now.ms)) errors.push({ field: 'expiresAt', message: `must be in the future (now is ${now.at} on the platform clock)` });
  }
  const inviter = await findCustomerByUmaAddress(deps.store.db, body.inviterUma);
  if (errors.length > 0) throw invalidInput(errors);
  if (!inviter || inviter.platform_id !== platform.id) {
    throw apiError(400, 'INVALID_UMA_ADDRESS', `${body.inviterUma} is not the UMA address of a customer of this platform`, { field: 'inviterUma' });
  }
  const currency = body.amountToSend !== undefined ? ((JSON.parse(inviter.currencies) as string[])[0] ?? null) : null;
  if (body.amountToSend !== undefined && currency === null) throw invalidInput([{ field: 'amountToSend', message: 'needs the inviter to have a currency' }]);
  for (let attempt = 0; ; attempt++) {
    const code = randomBytes(6).toString('hex');
    const row: InvitationsTable = {
      code,
      platform_id: platform.id,
      inviter_customer_id: inviter.id,
      inviter_uma: inviter.uma_address,
      invitee_uma: null,
      claimed_by_platform_id: null,
      first_name: body.firstName ?? null,
      amount_to_send: body.amountToSend ?? null,
      currency,
      status: 'PENDING',
      url: `${origin}/i/${code}`,
      expires_at: expiresMs !== null ? iso(expiresMs) : null,
      expires_at_ms: expiresMs,
      created_at: now.at,
      updated_at: now.at,
      claimed_at: null,
      cancelled_at: null,
    };
    try {
      await deps.store.db.transaction().execute(async (trx) => {
        await insertInvitation(trx, row);
        if (expiresMs !== null) await deps.jobs.schedule(trx, { platformId: platform.id, kind: EXPIRE_JOB, payload: { code }, runAtMs: expiresMs, at: now.at });
      });
      return invitationView(row, now.ms);
    } catch (err) {
      if (isUniqueViolation(err) && attempt < 3) continue; // a code drawn twice: draw again
      throw err;
    }
  }
}

/** The invitation and its inviter's platform (whose clock it follows). */
async function load(db: Kysely<DB>, code: string): Promise<{ row: InvitationsTable; inviterPlatform: PlatformRow }> {
  const row = await findInvitation(db, code);
  const inviterPlatform = row ? await findPlatform(db, row.platform_id) : undefined;
  if (!row || !inviterPlatform) throw notFound('INVITATION_NOT_FOUND', 'Invitation', code);
  return { row, inviterPlatform };
}

export async function getInvitation(deps: InvitationDeps, code: string): Promise<UmaInvitation> {
  const { row, inviterPlatform } = await load(deps.store.db, code);
  return invitationView(row, nowOfPlatform(deps.clock, inviterPlatform));
}

/** Why a non-PENDING invitation cannot be claimed or cancelled. */
function notPending(row: InvitationsTable, status: string, action: string): never {
  if (status === 'CLAIMED') {
    throw apiError(400, 'INVITATION_ALREADY_CLAIMED', `Invitation ${row.code} has already been claimed and cannot be ${action}`, { status, ...(row.invitee_uma ? { inviteeUma: row.invitee_uma } : {}) });
  }
  if (status === 'CANCELLED') throw apiError(400, 'INVITATION_CANCELLED', `Invitation ${row.code} has been cancelled and cannot be ${action}`, { status });
  throw apiError(400, 'INVALID_INPUT', `Invitation ${row.code} expired at ${row.expires_at ?? ''} and cannot be ${action}`, {
    status,
    expiresAt: row.expires_at,
    errors: [{ field: 'invitationCode', message: `expired at ${row.expires_at ?? ''}` }],
  });
}

export async function claimInvitation(deps: InvitationDeps, claimer: PlatformRow, code: string, inviteeUma: string): Promise<UmaInvitation> {
  const { row, inviterPlatform } = await load(deps.store.db, code);
  requireConfigured(claimer);
  const nowMs = nowOfPlatform(deps.clock, inviterPlatform);
  const status = statusAt(row, nowMs);
  if (status !== 'PENDING') notPending(row, status, 'claimed');
  if (inviteeUma === row.inviter_uma) {
    throw apiError(400, 'INVALID_UMA_ADDRESS', `${inviteeUma} is the inviter's own address: an invitation is claimed by someone else`, { field: 'inviteeUma' });
  }
  const at = iso(nowMs);
  return deps.store.db.transaction().execute(async (trx) => {
    const patch = { status: 'CLAIMED', invitee_uma: inviteeUma, claimed_by_platform_id: claimer.id, claimed_at: at, updated_at: at };
    if (!(await updatePending(trx, code, patch))) {
      const now = (await findInvitation(trx, code))!;
      notPending(now, now.status, 'claimed');
    }
    const view = invitationView({ ...row, ...patch }, nowMs);
    await emitEvent(trx, row.platform_id, at, { type: 'INVITATION.CLAIMED', resourceId: code, data: view });
    return view;
  });
}

export async function cancelInvitation(deps: InvitationDeps, platform: PlatformRow, code: string): Promise<UmaInvitation> {
  const row = await findInvitation(deps.store.db, code);
  if (!row) throw notFound('INVITATION_NOT_FOUND', 'Invitation', code);
  // Any platform reads the invitation by its code; only the inviter's platform cancels it
  // (reference cancelInvitation: 403).
  if (row.platform_id !== platform.id) {
    throw apiError(403, 'FORBIDDEN', `Invitation ${code} was created by another platform: only the platform that created it can cancel it`, { reason: 'NOT_INVITER_PLATFORM' });
  }
  const nowMs = nowOfPlatform(deps.clock, platform);
  const status = statusAt(row, nowMs);
  if (status !== 'PENDING') notPending(row, status, 'cancelled');
  const at = iso(nowMs);
  const patch = { status: 'CANCELLED', cancelled_at: at, updated_at: at };
  if (!(await updatePending(deps.store.db, code, patch))) {
    const now = (await findInvitation(deps.store.db, code))!;
    notPending(now, now.status, 'cancelled');
  }
  return invitationView({ ...row, ...patch }, nowMs);
}

/** The expiry job: a still PENDING invitation becomes EXPIRED, announced to the inviter's platform. */
async function expire(ctx: JobContext): Promise<void> {
  const { code } = ctx.job.payload as { code: string };
  const row = await findInvitation(ctx.trx, code);
  if (!row || row.status !== 'PENDING') return;
  const at = iso(ctx.nowMs);
  const patch = { status: 'EXPIRED', updated_at: at };
  if (!(await updatePending(ctx.trx, code, patch))) return;
  await emitEvent(ctx.trx, row.platform_id, at, { type: 'INVITATION.EXPIRED', resourceId: code, data: invitationView({ ...row, ...patch }, ctx.nowMs) });
}

export function registerInvitationJobs(jobs: JobQueue): void {
  jobs.registerOnce(EXPIRE_JOB, expire);
}

