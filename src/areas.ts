import type { Area } from './kernel/area.js';
import { platformsArea } from './operator/platforms/area.js';
import { tokensArea } from './api/tokens/area.js';
import { configArea } from './api/config/area.js';
import { customersArea } from './api/customers/area.js';
import { documentsArea } from './api/documents/area.js';
import { contactVerificationArea } from './api/contact-verification/area.js';
import { kycLinksArea } from './api/kyc-links/area.js';
import { beneficialOwnersArea } from './api/beneficial-owners/area.js';
import { verificationsArea } from './api/verifications/area.js';
import { externalAccountsArea } from './api/external-accounts/area.js';
import { exchangeRatesArea } from './api/exchange-rates/area.js';
import { discoveriesArea } from './api/discoveries/area.js';
import { umaReceiversArea } from './api/uma-receivers/area.js';
import { externalAccountLookupArea } from './api/external-account-lookup/area.js';
import { internalAccountsArea } from './api/internal-accounts/area.js';
import { sandboxFundingArea } from './sandbox/funding/area.js';
import { quotesArea } from './api/quotes/area.js';
import { cryptoArea } from './api/crypto/area.js';
import { transactionsArea } from './api/transactions/area.js';
import { incomingPaymentsArea } from './api/incoming-payments/area.js';
import { webhooksArea } from './api/webhooks/area.js';
import { sandboxClockArea } from './sandbox/clock/area.js';
import { scaArea } from './api/sca/area.js';
import { cardsArea } from './api/cards/area.js';
import { customersBulkArea } from './api/customers-bulk/area.js';
import { invitationsArea } from './api/invitations/area.js';
import { stablecoinsArea } from './api/stablecoins/area.js';
import { embeddedWalletsArea } from './api/embedded-wallets/area.js';
import { agentsArea } from './api/agents/area.js';
import { sandboxResetArea } from './sandbox/reset/area.js';
import { sandboxSnapshotsArea } from './sandbox/snapshots/area.js';
import { requestLogArea } from './sandbox/request-log/area.js';
import { sandboxWebhookLogArea } from './sandbox/webhook-log/area.js';
import { sandboxLedgerArea } from './sandbox/ledger-view/area.js';
import { sandboxSeedArea } from './sandbox/seed/area.js';
import { sandboxSettingsArea } from './sandbox/settings/area.js';
import { sandboxFaultsArea } from './sandbox/faults/area.js';
import { opsArea } from './operator/ops/area.js';
import { dashboardArea } from './dashboard/area.js';

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
  sandboxSnapshotsArea,
  requestLogArea,
  sandboxWebhookLogArea,
  sandboxLedgerArea,
  sandboxSeedArea,
  sandboxSettingsArea,
  sandboxFaultsArea,
  opsArea,
  dashboardArea,
];
