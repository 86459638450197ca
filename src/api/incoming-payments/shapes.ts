// The shapes of other areas this area's routes answer with: declared once, in their own
// area, and re-exported here so that the routes import only their own area (scripts/check-imports.mjs).
export { ApprovePaymentRequest, IncomingTransaction, RejectPaymentRequest, TransactionOneOf, TransactionParams } from '../transactions/schemas.js';
