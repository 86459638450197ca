import { Type } from 'typebox';
import { PlatformLimits } from '../../api/limits/schemas.js';

export const Platform = Type.Object({
  id: Type.String({ description: 'Platform:<uuid>' }),
  name: Type.String(),
  regulated: Type.Boolean({ description: 'Regulated financial institution; fixed at creation' }),
  isDefault: Type.Boolean({ description: 'The default sandbox platform of this server' }),
  skipVerificationPaperwork: Type.Boolean({ description: 'Sandbox option: the name suffix decides KYC/KYB with no documents' }),
  invitationsConfigured: Type.Boolean({ description: 'Sandbox option: UMA invitations are set up (default true); false answers invitation requests 400 INVITATIONS_NOT_CONFIGURED' }),
  sandboxClockOffsetMs: Type.Integer({ description: 'How far the sandbox clock is ahead of real time' }),
  webhookPublicKey: Type.Union([Type.String(), Type.Null()], { description: 'PEM (SPKI) of the P-256 key that signs this platform\'s webhooks' }),
  /** Transaction-limit overrides; absent while the platform uses the sandbox defaults. */
  limits: Type.Optional(PlatformLimits),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
});

export const PlatformCreateRequest = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 255 }),
  regulated: Type.Optional(Type.Boolean()),
  skipVerificationPaperwork: Type.Optional(Type.Boolean()),
  invitationsConfigured: Type.Optional(Type.Boolean()),
});

export const PlatformPatchRequest = Type.Object({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  skipVerificationPaperwork: Type.Optional(Type.Boolean()),
  invitationsConfigured: Type.Optional(Type.Boolean()),
  /** PlatformLimitsPatch (limits/schemas.ts), checked by limitsPatchErrors in the route. */
  limits: Type.Optional(Type.Unknown({ description: 'Transaction-limit overrides, merged: a value sets, null clears, absent leaves alone; null clears all' })),
});

export const Credentials = Type.Object({
  tokenId: Type.String(),
  clientId: Type.String(),
  clientSecret: Type.String({ description: 'Shown once' }),
});

export const PlatformCreated = Type.Object({ platform: Platform, credentials: Credentials });

export const PlatformIdParams = Type.Object({ id: Type.String() });
