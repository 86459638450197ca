import { Type } from 'typebox';

/** A platform's sandbox options, as the platform reads and sets them (the operator's Platform shows the same two). */
export const SandboxSettings = Type.Object(
  {
    skipVerificationPaperwork: Type.Boolean({
      description: 'The dashboard option "Skip verification paperwork": the last 3 characters of the name decide KYC/KYB with no documents (individuals at create, businesses at first submission). Default false',
    }),
    invitationsConfigured: Type.Boolean({
      description: 'UMA invitations are set up for the platform (default true); false answers POST /invitations and claims 400 INVITATIONS_NOT_CONFIGURED',
    }),
  },
  { title: 'SandboxSettings' },
);

export const SandboxSettingsUpdateRequest = Type.Object(
  {
    skipVerificationPaperwork: Type.Optional(Type.Boolean({ description: 'Turn "Skip verification paperwork" on or off; customers created before keep their status' })),
    invitationsConfigured: Type.Optional(Type.Boolean({ description: 'Whether UMA invitations are set up' })),
  },
  { additionalProperties: false, title: 'SandboxSettingsUpdateRequest' },
);
