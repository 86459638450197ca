import type { Area } from '../../kernel/area.js';
import { tokensRoutes } from './routes.js';

/** How the tokens area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const tokensArea: Area = {
  name: 'api/tokens',
  api: [tokensRoutes],
};
