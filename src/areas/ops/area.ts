import type { Area } from '../../kernel/area.js';
import { opsRoutes } from './routes.js';

/** How the ops area is mounted (kernel/area.ts; listed in src/areas/index.ts). */
export const opsArea: Area = {
  name: 'ops',
  pages: [opsRoutes],
};
