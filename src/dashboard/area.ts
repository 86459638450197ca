import type { Area } from '../kernel/area.js';
import { dashboardPages } from './pages.js';

/** How the dashboard is mounted (kernel/area.ts; listed in src/areas.ts). */
export const dashboardArea: Area = {
  name: 'dashboard',
  pages: [dashboardPages],
};
