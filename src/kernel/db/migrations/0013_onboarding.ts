import type { AnyDb } from './support.js';

// Platforms created before proxyUmaSubdomain was set get it from their UMA domain: its
// first label, lower-cased (the rule of proxyUmaSubdomainOf in src/sandbox/rules/platform-defaults.ts,
// written out so this entry never changes). No schema change.
export async function up(db: AnyDb): Promise<void> {
  const rows = (await db.selectFrom('platform_configs').select(['platform_id', 'uma_domain']).where('proxy_uma_subdomain', 'is', null).execute()) as Array<{
    platform_id: string;
    uma_domain: string;
  }>;
  for (const r of rows) {
    await db.updateTable('platform_configs').set({ proxy_uma_subdomain: r.uma_domain.toLowerCase().split('.')[0] }).where('platform_id', '=', r.platform_id).execute();
  }
}
