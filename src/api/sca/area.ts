import type { Area } from '../../kernel/area.js';
import { deleteGuards } from '../external-accounts/service.js';
import { setAuthorizationGate } from '../quotes/authorization.js';
import { scaRoutes } from './routes.js';
import { holdForAuthorization, registerScaJobs } from './payment-challenges.js';
import { refuseTrustedDelete } from './trusted-beneficiaries.js';

/** How the sca area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const scaArea: Area = {
  name: 'api/sca',
  // Its jobs, the payment-authorization gate of quote execution, and the guard on deleting a
  // trusted beneficiary's external account.
  wire: (deps) => {
    registerScaJobs(deps.jobs);
    setAuthorizationGate(holdForAuthorization);
    deleteGuards.add(refuseTrustedDelete);
  },
  api: [scaRoutes],
};
