import { Type, type Static } from 'typebox';
import { CurrencyAmount } from '../internal-accounts/schemas.js';

// UMA invitations: an inviter (a customer of the platform, by UMA address) shares a code;
// a platform — the same or another — claims it for the invitee's UMA address.

const UMA_PATTERN = '^\\$[A-Za-z0-9._+-]{1,63}@[A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)+$';
const UmaAddress = (description: string) => Type.String({ pattern: UMA_PATTERN, description });

export const INVITATION_STATUSES = ['PENDING', 'CLAIMED', 'EXPIRED', 'CANCELLED'] as const;

export const UmaInvitationCreateRequest = Type.Object(
  {
    inviterUma: UmaAddress('UMA address of the platform’s customer who invites'),
    firstName: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'First name shown on the invitation' })),
    amountToSend: Type.Optional(
      Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'Amount to send the invitee once claimed, in the smallest unit of the inviter’s (first) currency; for display: the platform sends it' }),
    ),
    expiresAt: Type.Optional(Type.String({ format: 'date-time', description: 'When the invitation expires (platform’s sandbox clock); must be in the future' })),
  },
  { title: 'UmaInvitationCreateRequest' },
);
export type UmaInvitationCreateRequest = Static<typeof UmaInvitationCreateRequest>;

export const UmaInvitationClaimRequest = Type.Object(
  { inviteeUma: UmaAddress('UMA address of the invitee who claims') },
  { title: 'UmaInvitationClaimRequest' },
);

export const UmaInvitation = Type.Object(
  {
    code: Type.String({ description: 'The invitation’s code (12 hex characters)' }),
    createdAt: Type.String({ format: 'date-time' }),
    claimedAt: Type.Optional(Type.String({ format: 'date-time' })),
    cancelledAt: Type.Optional(Type.String({ format: 'date-time' })),
    url: Type.String({ description: 'Where the invitation is shown' }),
    expiresAt: Type.Optional(Type.String({ format: 'date-time' })),
    inviterUma: Type.String(),
    inviteeUma: Type.Optional(Type.String()),
    status: Type.Enum([...INVITATION_STATUSES]),
    firstName: Type.Optional(Type.String()),
    amountToSend: Type.Optional(CurrencyAmount),
  },
  { title: 'UmaInvitation' },
);
export type UmaInvitation = Static<typeof UmaInvitation>;

export const InvitationCodeParams = Type.Object({ invitationCode: Type.String({ minLength: 1, maxLength: 64, description: 'The invitation’s code' }) });
