import type { Area } from '../../kernel/area.js';
import { documentsRoutes } from './routes.js';

/** How the documents area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const documentsArea: Area = {
  name: 'api/documents',
  api: [documentsRoutes],
};
