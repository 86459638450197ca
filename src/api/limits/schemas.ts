import { type Static, Type } from 'typebox';

// A platform's transaction-limit overrides, as the operator API shows and changes them
// (PATCH /admin/platforms/{id} `limits`). Amounts are integers from 0 (refuses every amount)
// to 2^53 − 1: `corridors` and `withdrawals` in the smallest unit of the SENDING currency,
// `default` in US cents (converted to the sending currency at the sandbox mid rate).

/** One limit's overrides as stored and shown (absent = not overridden). */
export const LimitOverrides = Type.Object({
  default: Type.Optional(Type.Integer({ description: 'US cents, for every corridor without its own value' })),
  corridors: Type.Optional(Type.Record(Type.String(), Type.Integer(), { description: '"SENDING:RECEIVING" → smallest unit of the sending currency' })),
  withdrawals: Type.Optional(Type.Record(Type.String(), Type.Integer(), { description: 'Currency → smallest unit (same-currency payouts)' })),
});
export type LimitOverrides = Static<typeof LimitOverrides>;

export const PlatformLimits = Type.Object({
  transactionSize: Type.Optional(LimitOverrides),
  dailyVolume: Type.Optional(LimitOverrides),
});
export type PlatformLimits = Static<typeof PlatformLimits>;

// A change (PATCH `limits`): a value sets, null clears, absent leaves alone; `limits: null`
// clears every override. Checked by limitsPatchErrors (service.ts) rather than a schema: the
// request validator reports nested "value or null" unions with duplicate errors, and the
// corridor keys need the currency table anyway. The route returns its errors together with
// the schema's in one 400.

export interface LimitOverridesPatch {
  default?: number | null;
  corridors?: Record<string, number | null> | null;
  withdrawals?: Record<string, number | null> | null;
}

export interface PlatformLimitsPatch {
  transactionSize?: LimitOverridesPatch | null;
  dailyVolume?: LimitOverridesPatch | null;
}
