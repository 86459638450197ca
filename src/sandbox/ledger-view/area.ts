import type { Area } from '../../kernel/area.js';
import { sandboxLedgerRoutes } from './routes.js';

/** How the sandbox-ledger area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const sandboxLedgerArea: Area = {
  name: 'sandbox/ledger-view',
  api: [sandboxLedgerRoutes],
};
