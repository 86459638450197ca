import { Type } from 'typebox';

// The faults' request and response shapes (the OpenAPI document's too).

export const REQUEST_FAULT_KINDS = ['INTERNAL_ERROR', 'SERVICE_UNAVAILABLE', 'RATE_LIMITED', 'DELAY', 'COMMIT_THEN_DROP'] as const;
export const WEBHOOK_FAULT_KINDS = ['WEBHOOK_DELAY', 'WEBHOOK_DUPLICATE', 'WEBHOOK_OUT_OF_ORDER'] as const;
export const FAULT_KINDS = [...REQUEST_FAULT_KINDS, ...WEBHOOK_FAULT_KINDS] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** The longest delay a rule may ask for (a request's or a webhook delivery's), in milliseconds. */
export const MAX_DELAY_MS = 60_000;
/** The longest a duration rule may run, in seconds (a day). */
export const MAX_DURATION_SECONDS = 86_400;
export const MAX_COUNT = 10_000;

export const SandboxFaultCreateRequest = Type.Object(
  {
    operation: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 300,
        description: 'Which calls: an operationId (`createQuote`), `METHOD /path-template` (`POST /quotes`), or `*` (every operation of the reference). Request kinds only; webhook kinds take none.',
      }),
    ),
    kind: Type.Enum([...FAULT_KINDS], { description: 'What happens: a request fault (INTERNAL_ERROR, SERVICE_UNAVAILABLE, RATE_LIMITED, DELAY, COMMIT_THEN_DROP) or a webhook fault (WEBHOOK_DELAY, WEBHOOK_DUPLICATE, WEBHOOK_OUT_OF_ORDER)' }),
    count: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_COUNT, description: 'The next N matching calls (or webhook deliveries). Either this or durationSeconds.' })),
    fraction: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1, description: 'With durationSeconds: the share of matching calls faulted (default 1), deterministically: the n-th is faulted when floor(n·fraction) > floor((n−1)·fraction)' })),
    durationSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_DURATION_SECONDS, description: 'For this many seconds of real time (not the sandbox clock). Either this or count.' })),
    delayMs: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_DELAY_MS, description: 'DELAY and WEBHOOK_DELAY (required there): how long, in real milliseconds' })),
    retryAfterSeconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 3_600, description: 'SERVICE_UNAVAILABLE and RATE_LIMITED: the Retry-After header (default 1)' })),
  },
  { additionalProperties: false },
);

export const SandboxFault = Type.Object(
  {
    id: Type.String({ description: 'SandboxFault:<uuid>' }),
    operation: Type.Union([Type.String(), Type.Null()]),
    kind: Type.Enum([...FAULT_KINDS]),
    count: Type.Union([Type.Integer(), Type.Null()], { description: 'The count asked for; null for a duration rule' }),
    remaining: Type.Union([Type.Integer(), Type.Null()], { description: 'Calls (or deliveries) still to be faulted; null for a duration rule' }),
    fraction: Type.Union([Type.Number(), Type.Null()]),
    durationSeconds: Type.Union([Type.Integer(), Type.Null()]),
    expiresAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'A duration rule: when it ends, in real time (not the sandbox clock)' }),
    delayMs: Type.Union([Type.Integer(), Type.Null()]),
    retryAfterSeconds: Type.Union([Type.Integer(), Type.Null()]),
    createdAt: Type.String({ format: 'date-time', description: 'On the platform\'s sandbox clock' }),
  },
  { title: 'SandboxFault' },
);

export const SandboxFaultList = Type.Object({ data: Type.Array(SandboxFault) });
export const SandboxFaultIdParams = Type.Object({ faultId: Type.String({ minLength: 1, maxLength: 200 }) });
export const SandboxFaultsCleared = Type.Object({ deleted: Type.Integer({ description: 'How many rules were removed' }) });
