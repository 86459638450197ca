import type { Area } from '../../kernel/area.js';
import { sandboxClockRoutes } from './routes.js';

/** How the sandbox-clock area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const sandboxClockArea: Area = {
  name: 'sandbox/clock',
  api: [sandboxClockRoutes],
};
