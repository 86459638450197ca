import { Type, type Static } from 'typebox';
import { FUND_MAX } from '../../sandbox/funding/schemas.js';

// POST /sandbox/uma/receive (sandboxReceive). The approve / reject bodies are the
// transactions area's ApprovePaymentRequest and RejectPaymentRequest.

export const SandboxUmaReceiveRequest = Type.Object(
  {
    senderUmaAddress: Type.String({
      description: 'UMA address of the sender: a sandbox sender at sandbox.uma.money or sandbox.grid.uma.money (see docs/sandbox.md, "Incoming UMA payments")',
      examples: ['$success.usd@sandbox.uma.money'],
    }),
    receiverUmaAddress: Type.Optional(Type.String({ description: 'UMA address of the receiver, a customer of the platform (optional if customerId is provided)', examples: ['$receiver@uma.domain'] })),
    customerId: Type.Optional(Type.String({ description: 'System ID of the receiver (optional if receiverUmaAddress is provided)', examples: ['Customer:019542f5-b3e7-1d02-0000-000000000001'] })),
    receivingCurrencyCode: Type.String({ description: 'The currency code of the receiving amount: the receiver must hold an internal account in it', examples: ['USD'] }),
    receivingCurrencyAmount: Type.Integer({
      exclusiveMinimum: 0,
      maximum: FUND_MAX,
      description: 'The amount to be received in the smallest unit of the currency (eg. cents)',
      examples: [1000],
    }),
  },
  { title: 'SandboxUmaReceiveRequest', additionalProperties: false },
);
export type SandboxUmaReceiveRequest = Static<typeof SandboxUmaReceiveRequest>;
