import type { Area } from '../../kernel/area.js';
import { embeddedWalletRoutes } from './routes.js';

/** How the embedded-wallets area is mounted (kernel/area.ts; listed in src/areas/index.ts). */
export const embeddedWalletsArea: Area = {
  name: 'embedded-wallets',
  api: [embeddedWalletRoutes],
};
