import type { Area } from '../../kernel/area.js';
import { legalPages } from './pages.js';
import { customersRoutes } from './routes.js';

/** How the customers area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const customersArea: Area = {
  name: 'api/customers',
  api: [customersRoutes],
  pages: [legalPages],
};
