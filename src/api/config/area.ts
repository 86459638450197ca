import type { Area } from '../../kernel/area.js';
import { configRoutes } from './routes.js';

/** How the config area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const configArea: Area = {
  name: 'api/config',
  api: [configRoutes],
};
