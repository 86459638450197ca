import type { Area } from '../../kernel/area.js';
import { legalPages } from './pages.js';
import { customersRoutes } from './routes.js';

/** How the customers area is mounted (kernel/area.ts; listed in src/areas/index.ts). */
export const customersArea: Area = {
  name: 'customers',
  api: [customersRoutes],
  pages: [legalPages],
};
