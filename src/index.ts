// The package entry: helpers for platforms that integrate with the Payments Service.
export { verifyWebhookSignature, SIGNATURE_HEADER } from './kernel/webhook-keys.js';
