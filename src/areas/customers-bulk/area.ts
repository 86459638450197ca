import type { Area } from '../../kernel/area.js';
import { customersBulkRoutes } from './routes.js';

/** How the customers-bulk area is mounted (kernel/area.ts; listed in src/areas/index.ts). */
export const customersBulkArea: Area = {
  name: 'customers-bulk',
  api: [customersBulkRoutes],
};
