import type { Area } from '../../kernel/area.js';
import { sandboxSeedRoutes } from './routes.js';

/** How the sandbox-seed area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const sandboxSeedArea: Area = {
  name: 'sandbox/seed',
  api: [sandboxSeedRoutes],
};
