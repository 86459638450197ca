import type { Area } from '../../kernel/area.js';
import { cardRevealPages, cardsRoutes } from './routes.js';

/** How the cards area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const cardsArea: Area = {
  name: 'api/cards',
  api: [cardsRoutes],
  pages: [cardRevealPages],
};
