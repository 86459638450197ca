import type { Kysely } from 'kysely';
import type { Clock } from '../../kernel/clock.js';
import type { DB } from '../../kernel/db/schema.js';
import { getPlatform, patchPlatform, type PlatformView } from '../../operator/platforms/service.js';

// A platform's sandbox options through its own API (GET/PATCH /sandbox/settings): the
// platforms area keeps them, and `patchPlatform` is the one function that changes them, for
// this route and the operator's PATCH /admin/platforms/{id} alike.

export interface SandboxSettings {
  skipVerificationPaperwork: boolean;
  invitationsConfigured: boolean;
}

const settingsOf = (p: PlatformView): SandboxSettings => ({ skipVerificationPaperwork: p.skipVerificationPaperwork, invitationsConfigured: p.invitationsConfigured });

export async function getSandboxSettings(db: Kysely<DB>, platformId: string): Promise<SandboxSettings> {
  return settingsOf(await getPlatform(db, platformId));
}

/** Fields left out stay as they are. */
export async function updateSandboxSettings(db: Kysely<DB>, clock: Clock, platformId: string, patch: Partial<SandboxSettings>): Promise<SandboxSettings> {
  return settingsOf(await patchPlatform(db, clock, platformId, { skipVerificationPaperwork: patch.skipVerificationPaperwork, invitationsConfigured: patch.invitationsConfigured }));
}
