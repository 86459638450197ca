import type { Area } from '../../kernel/area.js';
import { agentsRoutes } from './routes.js';

/** How the agents area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const agentsArea: Area = {
  name: 'api/agents',
  api: [agentsRoutes],
};
