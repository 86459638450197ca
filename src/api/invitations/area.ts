import type { Area } from '../../kernel/area.js';
import { invitationPages } from './pages.js';
import { invitationsRoutes } from './routes.js';

/** How the invitations area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const invitationsArea: Area = {
  name: 'api/invitations',
  api: [invitationsRoutes],
  pages: [invitationPages],
};
