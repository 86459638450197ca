import type { Area } from '../../kernel/area.js';
import { cardRevealPages, cardsRoutes } from './routes.js';

/** How the cards area is mounted (kernel/area.ts; listed in src/areas/index.ts). */
export const cardsArea: Area = {
  name: 'cards',
  api: [cardsRoutes],
  pages: [cardRevealPages],
};
