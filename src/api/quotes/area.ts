import type { Area } from '../../kernel/area.js';
import { quotesRoutes } from './routes.js';

/** How the quotes area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const quotesArea: Area = {
  name: 'api/quotes',
  api: [quotesRoutes],
};
