import type { AnyDb } from './support.js';

export async function up(db: AnyDb): Promise<void> {
  const bigint = 'bigint' as const;
  // Agents (api/agents): a customer's delegated AI agent, its policy (JSON), and the
  // hash of its access token (SHA-256 hex, unique: the token is looked up by it).
  await db.schema
    .createTable('agents')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull())
    .addColumn('customer_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('is_paused', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('is_connected', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('is_deleted', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('policy', 'text', (c) => c.notNull())
    .addColumn('token_hash', 'text', (c) => c.unique())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('agents_platform_customer').on('agents').columns(['platform_id', 'customer_id', 'id']).execute();
  // Device codes: one agent may have several over time; only the newest unredeemed one is live.
  await db.schema
    .createTable('agent_device_codes')
    .addColumn('code', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('expires_at_ms', bigint, (c) => c.notNull())
    .addColumn('redeemed_at', 'text')
    .addColumn('invalidated_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('agent_device_codes_agent').on('agent_device_codes').columns(['agent_id']).execute();
  // Agent actions (EXECUTE_QUOTE, TRANSFER_OUT, TRANSFER_IN) with their policy decision.
  await db.schema
    .createTable('agent_actions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('customer_id', 'text', (c) => c.notNull())
    .addColumn('platform_customer_id', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('quote_id', 'text', (c) => c.notNull())
    .addColumn('transaction_id', 'text', (c) => c.notNull())
    .addColumn('executed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('amount', bigint, (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('source_account_id', 'text')
    .addColumn('destination_account_id', 'text')
    .addColumn('internal_account_id', 'text')
    .addColumn('decision', 'text', (c) => c.notNull())
    .addColumn('decision_reasons', 'text', (c) => c.notNull())
    .addColumn('rejection_reason', 'text')
    .addColumn('failure_reason', 'text')
    .addColumn('decided_by', 'text')
    .addColumn('decided_at', 'text')
    .addColumn('expires_at', 'text')
    .addColumn('created_ms', bigint, (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('agent_actions_agent').on('agent_actions').columns(['platform_id', 'agent_id', 'id']).execute();
  await db.schema.createIndex('agent_actions_status').on('agent_actions').columns(['platform_id', 'status', 'id']).execute();
  await db.schema.createIndex('agent_actions_transaction').on('agent_actions').columns(['platform_id', 'transaction_id']).execute();
  // Quotes an agent created (GET /agents/me/quotes/{id} answers only its own).
  await db.schema
    .createTable('agent_quotes')
    .addColumn('quote_id', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .execute();
  // The audit trail: every policy evaluation (denials too) and every decision.
  await db.schema
    .createTable('agent_audit')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('action_id', 'text')
    .addColumn('operation', 'text', (c) => c.notNull())
    .addColumn('decision', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('actor', 'text', (c) => c.notNull())
    .addColumn('transaction_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('agent_audit_agent').on('agent_audit').columns(['platform_id', 'agent_id', 'id']).execute();
}
