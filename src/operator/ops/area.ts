import type { Area } from '../../kernel/area.js';
import { opsRoutes } from './routes.js';

/** How the ops area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const opsArea: Area = {
  name: 'operator/ops',
  pages: [opsRoutes],
};
