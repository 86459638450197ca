import { Type, type Static } from 'typebox';

// Contact verification: one-time codes for a customer's email and phone, for customers
// whose payment provider mandates it (EU regions; see src/sandbox/rules/verification-rules.ts).

export const ContactVerificationConfirmRequest = Type.Object(
  { code: Type.String({ minLength: 1, maxLength: 32, description: 'The one-time code the customer received. In the sandbox it is always 123456' }) },
  { title: 'ContactVerificationConfirmRequest' },
);
export type ContactVerificationConfirmRequest = Static<typeof ContactVerificationConfirmRequest>;
