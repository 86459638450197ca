import type { Area } from '../kernel/area.js';
import { platformsArea } from './platforms/area.js';
import { tokensArea } from './tokens/area.js';
import { configArea } from './config/area.js';
import { customersArea } from './customers/area.js';
import { documentsArea } from './documents/area.js';
import { contactVerificationArea } from './contact-verification/area.js';
import { kycLinksArea } from './kyc-links/area.js';
import { beneficialOwnersArea } from './beneficial-owners/area.js';
import { verificationsArea } from './verifications/area.js';
import { externalAccountsArea } from './external-accounts/area.js';
import { exchangeRatesArea } from './exchange-rates/area.js';
import { discoveriesArea } from './discoveries/area.js';
import { umaReceiversArea } from './uma-receivers/area.js';
import { externalAccountLookupArea } from './external-account-lookup/area.js';
import { internalAccountsArea } from './internal-accounts/area.js';
import { sandboxFundingArea } from './sandbox-funding/area.js';
import { quotesArea } from './quotes/area.js';
import { cryptoArea } from './crypto/area.js';
import { transactionsArea } from './transactions/area.js';
import { incomingPaymentsArea } from './incoming-payments/area.js';
import { webhooksArea } from './webhooks/area.js';
import { sandboxClockArea } from './sandbox-clock/area.js';
import { scaArea } from './sca/area.js';
import { cardsArea } from './cards/area.js';
import { customersBulkArea } from './customers-bulk/area.js';
import { invitationsArea } from './invitations/area.js';
import { stablecoinsArea } from './stablecoins/area.js';
import { embeddedWalletsArea } from './embedded-wallets/area.js';
import { agentsArea } from './agents/area.js';
import { sandboxResetArea } from './sandbox-reset/area.js';
import { requestLogArea } from './request-log/area.js';
import { sandboxWebhookLogArea } from './sandbox-webhook-log/area.js';
import { sandboxLedgerArea } from './sandbox-ledger/area.js';
import { sandboxSeedArea } from './sandbox-seed/area.js';
import { sandboxSettingsArea } from './sandbox-settings/area.js';
import { opsArea } from './ops/area.js';
import { dashboardArea } from '../dashboard/area.js';

// Every area, in one list: app.ts mounts what each one registers (kernel/area.ts), in this
// order. A new area is its folder (with an area.ts exporting its registration) plus one line
// here. The order is the OpenAPI document's order of operations; wire() runs in it too.
// Folders with nothing to mount (ledger, limits, lookups) are
// used through other areas' services and have no entry.
export const AREAS: readonly Area[] = [
  platformsArea,
  tokensArea,
  configArea,
  customersArea,
  documentsArea,
  contactVerificationArea,
  kycLinksArea,
  beneficialOwnersArea,
  verificationsArea,
  externalAccountsArea,
  exchangeRatesArea,
  discoveriesArea,
  umaReceiversArea,
  externalAccountLookupArea,
  internalAccountsArea,
  sandboxFundingArea,
  quotesArea,
  cryptoArea,
  transactionsArea,
  incomingPaymentsArea,
  webhooksArea,
  sandboxClockArea,
  scaArea,
  cardsArea,
  customersBulkArea,
  invitationsArea,
  stablecoinsArea,
  embeddedWalletsArea,
  agentsArea,
  sandboxResetArea,
  requestLogArea,
  sandboxWebhookLogArea,
  sandboxLedgerArea,
  sandboxSeedArea,
  sandboxSettingsArea,
  opsArea,
  dashboardArea,
];
