import type { Area } from '../../kernel/area.js';
import { requestLogRoutes } from './routes.js';
import { installRequestLog } from './service.js';

/** How the request-log area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const requestLogArea: Area = {
  name: 'sandbox/request-log',
  install: (app, deps) => installRequestLog(app, deps),
  api: [requestLogRoutes],
};
