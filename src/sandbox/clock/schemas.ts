import { Type } from 'typebox';

/** Ten years: enough for any sandbox scenario, far from integer limits. */
export const MAX_ADVANCE_SECONDS = 10 * 365 * 24 * 3600;

export const SandboxClock = Type.Object({
  now: Type.String({ format: 'date-time', description: 'Now on this platform\'s sandbox clock' }),
  offsetSeconds: Type.Number({ description: 'How far the platform clock is ahead of real time, in seconds (milliseconds as a fraction)' }),
});

export const AdvanceRequest = Type.Object(
  {
    seconds: Type.Integer({ minimum: 1, maximum: MAX_ADVANCE_SECONDS, description: 'How far to move the clock forward; time never goes back' }),
  },
  { additionalProperties: false },
);
