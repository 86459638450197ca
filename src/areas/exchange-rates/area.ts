import type { Area } from '../../kernel/area.js';
import { exchangeRatesRoutes } from './routes.js';

/** How the exchange-rates area is mounted (kernel/area.ts; listed in src/areas/index.ts). */
export const exchangeRatesArea: Area = {
  name: 'exchange-rates',
  api: [exchangeRatesRoutes],
};
