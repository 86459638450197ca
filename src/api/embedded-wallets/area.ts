import type { Area } from '../../kernel/area.js';
import { embeddedWalletRoutes } from './routes.js';

/** How the embedded-wallets area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const embeddedWalletsArea: Area = {
  name: 'api/embedded-wallets',
  api: [embeddedWalletRoutes],
};
