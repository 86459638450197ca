import type { Area } from '../../kernel/area.js';
import { sandboxSnapshotAdminRoutes, sandboxSnapshotRoutes } from './routes.js';

/** How the sandbox-snapshots area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const sandboxSnapshotsArea: Area = {
  name: 'sandbox/snapshots',
  api: [sandboxSnapshotRoutes],
  admin: [sandboxSnapshotAdminRoutes],
};
