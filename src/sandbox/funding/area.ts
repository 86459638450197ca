import type { Area } from '../../kernel/area.js';
import { sandboxFundingRoutes } from './routes.js';

/** How the sandbox-funding area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const sandboxFundingArea: Area = {
  name: 'sandbox/funding',
  api: [sandboxFundingRoutes],
};
