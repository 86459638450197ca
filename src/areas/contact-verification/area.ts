import type { Area } from '../../kernel/area.js';
import { contactVerificationRoutes } from './routes.js';

/** How the contact-verification area is mounted (kernel/area.ts; listed in src/areas/index.ts). */
export const contactVerificationArea: Area = {
  name: 'contact-verification',
  api: [contactVerificationRoutes],
};
