import type { Area } from '../../kernel/area.js';
import { contactVerificationRoutes } from './routes.js';

/** How the contact-verification area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const contactVerificationArea: Area = {
  name: 'api/contact-verification',
  api: [contactVerificationRoutes],
};
