import type { Area } from '../../kernel/area.js';
import { customersBulkRoutes } from './routes.js';

/** How the customers-bulk area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const customersBulkArea: Area = {
  name: 'api/customers-bulk',
  api: [customersBulkRoutes],
};
