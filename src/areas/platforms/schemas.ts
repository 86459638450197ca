import { Type } from 'typebox';

export const Platform = Type.Object({
  id: Type.String({ description: 'Platform:<uuid>' }),
  name: Type.String(),
  regulated: Type.Boolean({ description: 'Regulated financial institution; fixed at creation' }),
  isDefault: Type.Boolean({ description: 'The default sandbox platform of this server' }),
  skipVerificationPaperwork: Type.Boolean({ description: 'Sandbox option: the name suffix decides KYC/KYB with no documents' }),
  sandboxClockOffsetMs: Type.Integer({ description: 'How far the sandbox clock is ahead of real time' }),
  webhookPublicKey: Type.Union([Type.String(), Type.Null()], { description: 'PEM (SPKI) of the P-256 key that signs this platform\'s webhooks' }),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
});

export const PlatformCreateRequest = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 255 }),
  regulated: Type.Optional(Type.Boolean()),
  skipVerificationPaperwork: Type.Optional(Type.Boolean()),
});

export const PlatformPatchRequest = Type.Object({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  skipVerificationPaperwork: Type.Optional(Type.Boolean()),
});

export const Credentials = Type.Object({
  tokenId: Type.String(),
  clientId: Type.String(),
  clientSecret: Type.String({ description: 'Shown once' }),
});

export const PlatformCreated = Type.Object({ platform: Platform, credentials: Credentials });

export const PlatformIdParams = Type.Object({ id: Type.String() });
