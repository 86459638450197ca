import { Type, type Static } from 'typebox';

// POST /sandbox/internal-accounts/{accountId}/fund (sandboxFundInternalAccount).

export const FUND_MAX = 100_000_000_000;

export const SandboxFundRequest = Type.Object(
  {
    amount: Type.Integer({
      exclusiveMinimum: 0,
      maximum: FUND_MAX,
      description: "Amount to add in the smallest unit of the account's currency (cents for USD/EUR, satoshis for BTC)",
      examples: [100000],
    }),
  },
  { title: 'SandboxFundRequest', additionalProperties: false },
);
export type SandboxFundRequest = Static<typeof SandboxFundRequest>;

export const FundParams = Type.Object({ accountId: Type.String({ description: 'The ID of the internal account to fund' }) });
