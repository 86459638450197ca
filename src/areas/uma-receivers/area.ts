import type { Area } from '../../kernel/area.js';
import { umaReceiversRoutes } from './routes.js';

/** How the uma-receivers area is mounted (kernel/area.ts; listed in src/areas/index.ts). */
export const umaReceiversArea: Area = {
  name: 'uma-receivers',
  api: [umaReceiversRoutes],
};
