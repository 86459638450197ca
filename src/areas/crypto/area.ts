import type { Area } from '../../kernel/area.js';
import { cryptoRoutes } from './routes.js';

/** How the crypto area is mounted (kernel/area.ts; listed in src/areas/index.ts). */
export const cryptoArea: Area = {
  name: 'crypto',
  api: [cryptoRoutes],
};
