import type { Area } from '../../kernel/area.js';
import { sandboxSettingsRoutes } from './routes.js';

/** How the sandbox-settings area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const sandboxSettingsArea: Area = {
  name: 'sandbox/settings',
  api: [sandboxSettingsRoutes],
};
