import type { FastifyPluginAsync } from 'fastify';
import { agentsRoutes } from './agents/routes.js';
import { beneficialOwnersRoutes } from './beneficial-owners/routes.js';
import { cardRevealPages, cardsRoutes } from './cards/routes.js';
import { configRoutes } from './config/routes.js';
import { contactVerificationRoutes } from './contact-verification/routes.js';
import { cryptoRoutes } from './crypto/routes.js';
import { legalPages } from './customers/pages.js';
import { customersRoutes } from './customers/routes.js';
import { customersBulkRoutes } from './customers-bulk/routes.js';
import { invitationPages } from './invitations/pages.js';
import { invitationsRoutes } from './invitations/routes.js';
import { stablecoinsRoutes } from './stablecoins/routes.js';
import { discoveriesRoutes } from './discoveries/routes.js';
import { documentsRoutes } from './documents/routes.js';
import { embeddedWalletRoutes } from './embedded-wallets/routes.js';
import { exchangeRatesRoutes } from './exchange-rates/routes.js';
import { externalAccountLookupRoutes } from './external-account-lookup/routes.js';
import { ownershipVerificationPages } from './external-accounts/pages.js';
import { externalAccountsRoutes } from './external-accounts/routes.js';
import { internalAccountsRoutes } from './internal-accounts/routes.js';
import { incomingPaymentsRoutes } from './incoming-payments/routes.js';
import { hostedKycPages } from './kyc-links/pages.js';
import { kycLinkRoutes } from './kyc-links/routes.js';
import { adminRoutes } from './platforms/routes.js';
import { quotesRoutes } from './quotes/routes.js';
import { sandboxClockRoutes } from './sandbox-clock/routes.js';
import { scaRoutes } from './sca/routes.js';
import { sandboxFundingRoutes } from './sandbox-funding/routes.js';
import { tokensRoutes } from './tokens/routes.js';
import { transactionsRoutes } from './transactions/routes.js';
import { umaReceiversRoutes } from './uma-receivers/routes.js';
import { verificationsRoutes } from './verifications/routes.js';
import { webhookAdminRoutes, webhookRoutes } from './webhooks/routes.js';
import { requestLogRoutes } from './request-log/routes.js';
import { sandboxResetAdminRoutes, sandboxResetRoutes } from './sandbox-reset/routes.js';
import { opsRoutes } from './ops/routes.js';
import { sandboxWebhookLogRoutes } from './sandbox-webhook-log/routes.js';
import { sandboxLedgerRoutes } from './sandbox-ledger/routes.js';
import { sandboxSeedRoutes } from './sandbox-seed/routes.js';
import { sandboxSettingsRoutes } from './sandbox-settings/routes.js';
import { dashboardPages } from '../dashboard/pages.js';

// Every area's HTTP surface, in one place: a new area adds its plugins here. The app
// mounts `api` under the version prefix (authenticated), `admin` under /admin (only when
// PAYMENTS_ADMIN_KEY is set) and `pages` at the root (public pages the API links to).

// Plugins are typed loosely here: each area's plugin carries its own type provider.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Plugin = FastifyPluginAsync<any>;

export const apiPlugins: readonly Plugin[] = [
  tokensRoutes,
  configRoutes,
  customersRoutes,
  documentsRoutes,
  contactVerificationRoutes,
  kycLinkRoutes,
  beneficialOwnersRoutes,
  verificationsRoutes,
  externalAccountsRoutes,
  exchangeRatesRoutes,
  discoveriesRoutes,
  umaReceiversRoutes,
  externalAccountLookupRoutes,
  internalAccountsRoutes,
  sandboxFundingRoutes,
  quotesRoutes,
  cryptoRoutes,
  transactionsRoutes,
  incomingPaymentsRoutes,
  webhookRoutes,
  sandboxClockRoutes,
  scaRoutes,
  cardsRoutes,
  customersBulkRoutes,
  invitationsRoutes,
  stablecoinsRoutes,
  embeddedWalletRoutes,
  agentsRoutes,
  sandboxResetRoutes,
  requestLogRoutes,
  sandboxWebhookLogRoutes,
  sandboxLedgerRoutes,
  sandboxSeedRoutes,
  sandboxSettingsRoutes,
] as Plugin[];

export const adminPlugins: readonly Plugin[] = [adminRoutes, webhookAdminRoutes, sandboxResetAdminRoutes] as Plugin[];

export const pagePlugins: readonly Plugin[] = [legalPages, ownershipVerificationPages, hostedKycPages, cardRevealPages, invitationPages, opsRoutes, dashboardPages] as Plugin[];
