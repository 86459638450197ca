import type { Area } from '../../kernel/area.js';
import { cryptoRoutes } from './routes.js';

/** How the crypto area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const cryptoArea: Area = {
  name: 'api/crypto',
  api: [cryptoRoutes],
};
