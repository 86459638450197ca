import type { Area } from '../../kernel/area.js';
import { sandboxResetAdminRoutes, sandboxResetRoutes } from './routes.js';

/** How the sandbox-reset area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const sandboxResetArea: Area = {
  name: 'sandbox/reset',
  api: [sandboxResetRoutes],
  admin: [sandboxResetAdminRoutes],
};
