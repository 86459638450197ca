import type { Area } from '../../kernel/area.js';
import { exchangeRatesRoutes } from './routes.js';

/** How the exchange-rates area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const exchangeRatesArea: Area = {
  name: 'api/exchange-rates',
  api: [exchangeRatesRoutes],
};
