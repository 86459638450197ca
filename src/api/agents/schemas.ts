import { type Static, Type } from 'typebox';
import { ListOf, PageQuery, SortOrderQuery } from '../../kernel/pagination.js';
import { Quote } from '../quotes/schemas.js';
import { TransactionOneOf } from '../transactions/schemas.js';

// Agents (docs/agents.md): the reference's Agent Management and Agent Operations shapes.

export const AGENT_PERMISSIONS = ['VIEW_TRANSACTIONS', 'CREATE_TRANSFERS', 'CREATE_QUOTES', 'EXECUTE_QUOTES', 'MANAGE_EXTERNAL_ACCOUNTS'] as const;
export type AgentPermissionName = (typeof AGENT_PERMISSIONS)[number];
export const AgentPermission = Type.Enum([...AGENT_PERMISSIONS], {
  title: 'AgentPermission',
  description:
    'What an agent may do. VIEW_TRANSACTIONS: list and read transactions and account balances; CREATE_TRANSFERS: transfer-in and transfer-out; ' +
    'CREATE_QUOTES: create quotes; EXECUTE_QUOTES: execute them; MANAGE_EXTERNAL_ACCOUNTS: list, read, add and delete external accounts',
});

export const AgentExecutionMode = Type.Enum(['AUTO', 'APPROVAL_REQUIRED'], {
  title: 'AgentExecutionMode',
  description: 'AUTO: an allowed action executes at once; APPROVAL_REQUIRED: it waits, pending, for the platform to approve or reject it',
});

const Amount = (description: string) => Type.Integer({ minimum: 0, maximum: 9_000_000_000_000_000, description });
const NullableAmount = (description: string) => Type.Union([Amount(description), Type.Null()], { description });
const CurrencyCode = Type.String({ pattern: '^[A-Z]{3,5}$', description: 'Currency code (ISO 4217, or a crypto ticker) the amounts are in' });

export const AgentSpendingLimits = Type.Object(
  {
    currency: CurrencyCode,
    perTransactionLimit: Amount('Largest amount of one action (smallest unit of `currency`); an amount equal to it is allowed'),
    dailyLimit: Type.Optional(NullableAmount('Largest total of the actions of one UTC day of the sandbox clock; null: none')),
    dailyTransactionLimit: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000, description: 'Most actions per UTC day of the sandbox clock' })),
    monthlyLimit: Type.Optional(NullableAmount('Largest total of the actions of one UTC calendar month of the sandbox clock; null: none')),
  },
  { title: 'AgentSpendingLimits', additionalProperties: false },
);

export const AgentAccountRule = Type.Object(
  {
    accountId: Type.String({ description: 'The internal account the rule applies to' }),
    executionMode: Type.Optional(AgentExecutionMode),
    perTransactionLimit: Type.Optional(NullableAmount('Per-transaction limit for this account, in the spending limits’ currency; null inherits')),
  },
  { title: 'AgentAccountRule', additionalProperties: false },
);

export const AgentAccountRestrictions = Type.Object(
  {
    allowedAccountIds: Type.Optional(
      Type.Union([Type.Array(Type.String(), { maxItems: 100 }), Type.Null()], { description: 'The only internal accounts the agent may act on; null or absent: all of its customer’s' }),
    ),
    accountRules: Type.Optional(Type.Array(AgentAccountRule, { maxItems: 100, description: 'Per-account overrides' })),
  },
  { title: 'AgentAccountRestrictions', additionalProperties: false },
);

export const AgentApprovalThresholds = Type.Object(
  {
    currency: Type.Optional(CurrencyCode),
    amount: Type.Optional(NullableAmount('An action above this amount needs approval even in AUTO mode; null: no threshold')),
  },
  { title: 'AgentApprovalThresholds', additionalProperties: false },
);

export const AgentPolicy = Type.Object(
  {
    permissions: Type.Array(AgentPermission, { maxItems: 5, uniqueItems: true }),
    defaultExecutionMode: AgentExecutionMode,
    spendingLimits: AgentSpendingLimits,
    accountRestrictions: Type.Optional(AgentAccountRestrictions),
    approvalThresholds: Type.Optional(AgentApprovalThresholds),
  },
  { title: 'AgentPolicy', additionalProperties: false },
);
export type AgentPolicy = Static<typeof AgentPolicy>;

export const AgentUsage = Type.Object(
  {
    dailyTransactionCount: Type.Integer({ description: 'Actions counted today (UTC day of the sandbox clock)' }),
    dailySpend: Type.Integer({ description: 'Their total, in the spending limits’ currency' }),
    dailyResetDate: Type.String({ format: 'date', description: 'The day the daily counters start again' }),
    monthlySpend: Type.Integer({ description: 'Total of this month’s counted actions, in the spending limits’ currency' }),
    monthlyResetMonth: Type.String({ description: 'The month (YYYY-MM) the monthly counter starts again' }),
  },
  { title: 'AgentUsage' },
);

export const Agent = Type.Object(
  {
    id: Type.String({ description: 'Agent:<uuid>' }),
    name: Type.String(),
    customerId: Type.String(),
    isPaused: Type.Boolean(),
    isConnected: Type.Boolean({ description: 'Whether a device code of the agent was redeemed' }),
    policy: AgentPolicy,
    usage: AgentUsage,
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  { title: 'Agent' },
);
export type Agent = Static<typeof Agent>;

export const AgentListResponse = ListOf(Agent, 'agents');

export const AgentCreateRequest = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 255 }),
    customerId: Type.String({ description: 'The customer the agent acts for' }),
    policy: AgentPolicy,
  },
  { title: 'AgentCreateRequest', additionalProperties: false },
);
export type AgentCreateRequest = Static<typeof AgentCreateRequest>;

export const AgentDeviceCode = Type.Object(
  {
    code: Type.String({ description: 'The code the agent software redeems: AGENT- then three groups of four characters, e.g. AGENT-7KQ2-M9TD-4HXP' }),
    agentId: Type.String(),
    expiresAt: Type.String({ format: 'date-time', description: '24 hours of the sandbox clock after it was issued' }),
    redeemed: Type.Boolean(),
  },
  { title: 'AgentDeviceCode' },
);

export const AgentCreateResponse = Type.Object({ agent: Agent, deviceCode: AgentDeviceCode }, { title: 'AgentCreateResponse' });

export const AgentUpdateRequest = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    isPaused: Type.Optional(Type.Boolean({ description: 'true pauses the agent (every agent operation but GET /agents/me is refused), false resumes it' })),
  },
  { title: 'AgentUpdateRequest', additionalProperties: false, minProperties: 1 },
);

export const AgentSpendingLimitsUpdate = Type.Object(
  {
    currency: Type.Optional(CurrencyCode),
    perTransactionLimit: Type.Optional(Amount('Largest amount of one action')),
    dailyLimit: Type.Optional(NullableAmount('Largest daily total; null removes it')),
    dailyTransactionLimit: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000 })),
    monthlyLimit: Type.Optional(NullableAmount('Largest monthly total; null removes it')),
  },
  { title: 'AgentSpendingLimitsUpdate', additionalProperties: false },
);

export const AgentPolicyUpdateRequest = Type.Object(
  {
    permissions: Type.Optional(Type.Array(AgentPermission, { maxItems: 5, uniqueItems: true })),
    defaultExecutionMode: Type.Optional(AgentExecutionMode),
    spendingLimits: Type.Optional(AgentSpendingLimitsUpdate),
    accountRestrictions: Type.Optional(AgentAccountRestrictions),
    approvalThresholds: Type.Optional(AgentApprovalThresholds),
  },
  { title: 'AgentPolicyUpdateRequest', additionalProperties: false },
);
export type AgentPolicyUpdateRequest = Static<typeof AgentPolicyUpdateRequest>;

export const AgentActionStatus = Type.Enum(['PENDING_APPROVAL', 'APPROVED', 'REJECTED', 'FAILED'], { title: 'AgentActionStatus' });
export type AgentActionStatusName = 'PENDING_APPROVAL' | 'APPROVED' | 'REJECTED' | 'FAILED';
export const AgentActionType = Type.Enum(['EXECUTE_QUOTE', 'TRANSFER_OUT', 'TRANSFER_IN'], { title: 'AgentActionType' });
export type AgentActionTypeName = 'EXECUTE_QUOTE' | 'TRANSFER_OUT' | 'TRANSFER_IN';

export const AgentTransferDetails = Type.Object(
  {
    amount: Type.Integer(),
    currency: Type.String(),
    sourceAccountId: Type.String(),
    destinationAccountId: Type.String(),
  },
  { title: 'AgentTransferDetails' },
);

export const AgentPolicyDecision = Type.Object(
  {
    executionMode: AgentExecutionMode,
    reasons: Type.Array(Type.String(), {
      description: 'Why: EXECUTION_MODE (the default or the account rule asks for approval), APPROVAL_THRESHOLD_EXCEEDED, WITHIN_POLICY (executed automatically)',
    }),
  },
  { title: 'AgentPolicyDecision', description: 'The policy’s verdict when the agent submitted the action (extension)' },
);

export const AgentAction = Type.Object(
  {
    id: Type.String({ description: 'AgentAction:<uuid>' }),
    agentId: Type.String(),
    customerId: Type.String(),
    platformCustomerId: Type.String(),
    status: AgentActionStatus,
    type: AgentActionType,
    quote: Type.Optional(Quote),
    transferDetails: Type.Optional(AgentTransferDetails),
    transaction: Type.Optional(TransactionOneOf),
    rejectionReason: Type.Optional(Type.String()),
    policyDecision: Type.Optional(AgentPolicyDecision),
    failureReason: Type.Optional(Type.String({ description: 'Why an approved action did not execute (FAILED): QUOTE_EXPIRED, APPROVAL_EXPIRED, POLICY_DENIED, EXECUTION_FAILED' })),
    decidedBy: Type.Optional(Type.String({ description: 'The API token that approved or rejected it; SYSTEM when it expired' })),
    decidedAt: Type.Optional(Type.String({ format: 'date-time' })),
    expiresAt: Type.Optional(Type.String({ format: 'date-time', description: 'Until when a pending action can be approved' })),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  { title: 'AgentAction' },
);
export type AgentAction = Static<typeof AgentAction>;

export const AgentActionListResponse = ListOf(AgentAction, 'agent actions');

export const AgentActionRejectRequest = Type.Object(
  { reason: Type.Optional(Type.String({ maxLength: 1000, description: 'Kept on the action as rejectionReason' })) },
  { title: 'AgentActionRejectRequest', additionalProperties: false },
);

export const AgentDeviceCodeStatusResponse = Type.Object(
  {
    code: Type.String(),
    redeemed: Type.Boolean(),
    status: Type.Enum(['PENDING', 'REDEEMED', 'EXPIRED'], { description: 'PENDING: can be redeemed; REDEEMED; EXPIRED: past expiresAt, or replaced by a newer code (extension)' }),
    agentId: Type.String(),
    expiresAt: Type.String({ format: 'date-time' }),
  },
  { title: 'AgentDeviceCodeStatusResponse' },
);

export const AgentDeviceCodeRedeemResponse = Type.Object(
  {
    agentId: Type.String(),
    agentName: Type.String(),
    accessToken: Type.String({ description: 'Bearer token of AgentAuth; returned once, only its hash is kept' }),
    policy: AgentPolicy,
  },
  { title: 'AgentDeviceCodeRedeemResponse' },
);

export const AgentAuditEntry = Type.Object(
  {
    id: Type.String({ description: 'AgentAudit:<uuid>' }),
    agentId: Type.String(),
    actionId: Type.Optional(Type.String()),
    operation: Type.String({ description: 'What was asked: EXECUTE_QUOTE, TRANSFER_OUT, TRANSFER_IN, CREATE_QUOTE, … or the decision on an action' }),
    decision: Type.Enum(['DENIED', 'AUTO', 'APPROVAL_REQUIRED', 'APPROVED', 'REJECTED', 'FAILED', 'EXPIRED']),
    reason: Type.String(),
    actor: Type.String({ description: 'Who: the agent, the approving API token, or SYSTEM' }),
    transactionId: Type.Optional(Type.String()),
    createdAt: Type.String({ format: 'date-time' }),
  },
  { title: 'AgentAuditEntry' },
);
export type AgentAuditEntry = Static<typeof AgentAuditEntry>;
export const AgentAuditListResponse = ListOf(AgentAuditEntry, 'audit entries');

// ---- Parameters and queries ----------------------------------------------------------

export const AgentIdParams = Type.Object({ agentId: Type.String() });
export const AgentActionParams = Type.Object({ agentId: Type.String(), actionId: Type.String() });
export const DeviceCodeParams = Type.Object({ code: Type.String() });
export const ActionIdParams = Type.Object({ actionId: Type.String() });

export const AgentListQuery = Type.Object({
  customerId: Type.Optional(Type.String()),
  isPaused: Type.Optional(Type.Boolean()),
  isConnected: Type.Optional(Type.Boolean()),
  createdAfter: Type.Optional(Type.String({ format: 'date-time' })),
  createdBefore: Type.Optional(Type.String({ format: 'date-time' })),
  updatedAfter: Type.Optional(Type.String({ format: 'date-time' })),
  updatedBefore: Type.Optional(Type.String({ format: 'date-time' })),
  ...PageQuery,
});
export type AgentListQuery = Static<typeof AgentListQuery>;

export const AgentApprovalsQuery = Type.Object({
  agentId: Type.Optional(Type.String()),
  customerId: Type.Optional(Type.String()),
  startDate: Type.Optional(Type.String({ format: 'date-time' })),
  endDate: Type.Optional(Type.String({ format: 'date-time' })),
  ...PageQuery,
  sortOrder: SortOrderQuery,
});
export type AgentApprovalsQuery = Static<typeof AgentApprovalsQuery>;

export const AgentActionsQuery = Type.Object({ status: Type.Optional(AgentActionStatus), ...PageQuery });
export const AgentAuditQuery = Type.Object({ ...PageQuery });
