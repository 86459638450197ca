import type { Area } from '../../kernel/area.js';
import { umaReceiversRoutes } from './routes.js';

/** How the uma-receivers area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const umaReceiversArea: Area = {
  name: 'api/uma-receivers',
  api: [umaReceiversRoutes],
};
