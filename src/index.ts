// The package entry: helpers for platforms that integrate with the Payments Service.
export { verifyWebhookSignature, SIGNATURE_HEADER, SIGNATURE_HEADER_ALIAS } from './kernel/webhook-keys.js';
