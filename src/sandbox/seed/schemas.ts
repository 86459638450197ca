import { Type } from 'typebox';

export const SeedResponse = Type.Object(
  {
    customers: Type.Array(Type.Object({ id: Type.String(), name: Type.String(), status: Type.String({ description: 'KYC/KYB status after the seed' }) })),
    internalAccounts: Type.Array(Type.String()),
    externalAccounts: Type.Array(Type.String()),
    transactions: Type.Array(Type.Object({ id: Type.String(), expected: Type.String({ description: 'The status the sandbox outcome leads to' }) })),
  },
  { title: 'SandboxSeedResponse' },
);
