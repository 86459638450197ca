import type { Area } from '../../kernel/area.js';
import { quotesRoutes } from './routes.js';

/** How the quotes area is mounted (kernel/area.ts; listed in src/areas/index.ts). */
export const quotesArea: Area = {
  name: 'quotes',
  api: [quotesRoutes],
};
