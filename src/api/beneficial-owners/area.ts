import type { Area } from '../../kernel/area.js';
import { beneficialOwnersRoutes } from './routes.js';

/** How the beneficial-owners area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const beneficialOwnersArea: Area = {
  name: 'api/beneficial-owners',
  api: [beneficialOwnersRoutes],
};
