import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { ApiError } from '../../kernel/errors.js';
import { authOf, errorResponses, NoContent, nowOf } from '../../kernel/http.js';
import { ExternalAccountIdParams, Quote, QuoteParams } from './shapes.js';
import {
  BeneficiaryTrustConfirm,
  BeneficiaryTrustConfirmRequest,
  BeneficiaryTrustStart,
  CredentialParams,
  CustomerIdQuery,
  RecordSecurityEventRequest,
  RecordSecurityEventResponse,
  ResetParams,
  ScaAuthorization,
  ScaFactorConfirmRequest,
  ScaFactorConfirmResponse,
  ScaFactorEnrollRequest,
  ScaFactorEnrollStart,
  ScaFactorList,
  ScaLoginComplete,
  ScaLoginCompleteRequest,
  ScaLoginStart,
  ScaLoginStartRequest,
  TwoFactorResetCompleteRequest,
  TwoFactorResetStart,
  TwoFactorResetStartRequest,
  TwoFactorResetStatus,
} from './schemas.js';
import { confirmEnrollment, deleteScaFactor, listScaFactors, startEnrollment } from './factors.js';
import { completeLogin, startLogin } from './login.js';
import { authorizeQuote, resendQuoteCode } from './payment-challenges.js';
import { completeResetFlow, getResetStatus, startReset } from './reset.js';
import { recordSecurityEvent } from './security-events.js';
import { confirmTrustChange, startTrustChange } from './trusted-beneficiaries.js';

const tags = ['Strong Customer Authentication'];
const OUT_OF_SCOPE = ' Only for customers whose provider requires SCA (EU/EEA regions); for anyone else 409.';

/** A 429 carries Retry-After (seconds), from its details. */
async function withRetryAfter<T>(reply: FastifyReply, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof ApiError && err.status === 429 && typeof err.details?.retryAfterSeconds === 'number') reply.header('retry-after', String(err.details.retryAfterSeconds));
    throw err;
  }
}

export const scaRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { store, clock, jobs } = app.deps;
  const deps = { store, jobs };

  app.get(
    '/sca/factors',
    {
      config: { auth: 'basic' },
      schema: {
        tags,
        operationId: 'listScaFactors',
        summary: 'List enrolled SCA factors',
        description: `SMS_OTP is always listed (it uses the customer's phone); TOTP and PASSKEY once enrolled.${OUT_OF_SCOPE}`,
        querystring: CustomerIdQuery,
        response: { 200: ScaFactorList, ...errorResponses(404, 409) },
      },
    },
    async (req) => listScaFactors(store.db, authOf(req).platform.id, req.query.customerId),
  );

  app.post(
    '/sca/factors',
    {
      config: { auth: 'basic' },
      schema: {
        tags,
        operationId: 'startScaFactorEnrollment',
        summary: 'Start SCA factor enrollment',
        description: `Start enrolling TOTP (returns the shared secret) or PASSKEY (returns WebAuthn options); confirm within 10 minutes. One passkey per customer (409 PASSKEY_ALREADY_ENROLLED).${OUT_OF_SCOPE}`,
        querystring: CustomerIdQuery,
        body: ScaFactorEnrollRequest,
        response: { 200: ScaFactorEnrollStart, ...errorResponses(404, 409) },
      },
    },
    async (req) => startEnrollment(store, authOf(req).platform.id, nowOf(req, clock), req.query.customerId, req.body.type),
  );

  app.post(
    '/sca/factors/confirm',
    {
      config: { auth: 'basic' },
      schema: {
        tags,
        operationId: 'confirmScaFactorEnrollment',
        summary: 'Confirm SCA factor enrollment',
        description: `TOTP: the start's secret and the first code (sandbox: always 123456), answered with recovery codes. PASSKEY: the credential and its origin, answered with the factor.${OUT_OF_SCOPE}`,
        querystring: CustomerIdQuery,
        body: ScaFactorConfirmRequest,
        response: { 200: ScaFactorConfirmResponse, ...errorResponses(404, 409) },
      },
    },
    async (req) => confirmEnrollment(store, authOf(req).platform.id, nowOf(req, clock), req.query.customerId, req.body),
  );

  app.delete(
    '/sca/factors/:credentialId',
    {
      config: { auth: 'basic' },
      schema: {
        tags,
        operationId: 'deleteScaFactor',
        summary: 'Delete an enrolled SCA factor',
        description: `Delete the passkey with this credentialId.${OUT_OF_SCOPE}`,
        querystring: CustomerIdQuery,
        params: CredentialParams,
        response: { 204: NoContent, ...errorResponses(404, 409) },
      },
    },
    async (req, reply) => {
      await deleteScaFactor(store, authOf(req).platform.id, req.query.customerId, req.params.credentialId);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/sca/login/start',
    {
      config: { auth: 'basic' },
      schema: {
        tags,
        operationId: 'startScaLogin',
        summary: 'Start an SCA login',
        description: `SMS_OTP sends a code (challengeId, expiresAt: 5 minutes); TOTP and PASSKEY must be enrolled.${OUT_OF_SCOPE}`,
        querystring: CustomerIdQuery,
        body: ScaLoginStartRequest,
        response: { 200: ScaLoginStart, ...errorResponses(404, 409) },
      },
    },
    async (req) => startLogin(store, authOf(req).platform.id, nowOf(req, clock), req.query.customerId, req.body.factor),
  );

  app.post(
    '/sca/login/complete',
    {
      config: { auth: 'basic' },
      schema: {
        tags,
        operationId: 'completeScaLogin',
        summary: 'Complete an SCA login',
        description: `The started login's proof (sandbox code 123456) opens a session of 180 days of platform time: \`sessionExpiresAt\`. Wrong proofs count towards the lock (423 ACCOUNT_LOCKED).${OUT_OF_SCOPE}`,
        querystring: CustomerIdQuery,
        body: ScaLoginCompleteRequest,
        response: { 200: ScaLoginComplete, ...errorResponses(404, 409, 423) },
      },
    },
    async (req) => completeLogin(store, authOf(req).platform.id, nowOf(req, clock), req.query.customerId, req.body),
  );

  app.post(
    '/sca/record-event',
    {
      config: { auth: 'basic' },
      schema: {
        tags,
        operationId: 'recordSecurityEvent',
        summary: 'Record a security event',
        description: `FAILED_LOGIN_ATTEMPT counts a failure (5 → locked 15 min, 6 → 30 min, 7 → 1 h, 8 → 24 h, 9 → suspended; 423 while locked); RESET_PASSWORD_COMPLETED revokes the sessions and clears the lock.${OUT_OF_SCOPE}`,
        querystring: CustomerIdQuery,
        body: RecordSecurityEventRequest,
        response: { 200: RecordSecurityEventResponse, ...errorResponses(404, 409, 423) },
      },
    },
    async (req) => recordSecurityEvent(store, authOf(req).platform.id, nowOf(req, clock), req.query.customerId, req.body.eventType),
  );

  app.post(
    '/sca/factors/reset',
    {
      config: { auth: 'basic' },
      schema: {
        tags,
        operationId: 'startTwoFactorReset',
        summary: 'Start a 2FA reset',
        description: `Open a liveness-gated reset of an enrolled factor; poll its status. At most 5 per customer in 24 hours (429 with Retry-After).${OUT_OF_SCOPE}`,
        querystring: CustomerIdQuery,
        body: TwoFactorResetStartRequest,
        response: { 201: TwoFactorResetStart, ...errorResponses(404, 409, 429) },
      },
    },
    async (req, reply) => {
      const out = await withRetryAfter(reply, () => startReset(store, authOf(req).platform.id, nowOf(req, clock), req.query.customerId, req.body.factor));
      return reply.code(201).send(out);
    },
  );

  app.get(
    '/sca/factors/reset/:resetId',
    {
      config: { auth: 'basic' },
      schema: {
        tags,
        operationId: 'getTwoFactorResetStatus',
        summary: 'Get 2FA reset status',
        description: `Sandbox clock: INITIATED for 30 s, PENDING_REVIEW until 60 s, then LIVENESS_PASSED; EXPIRED after 24 h; COMPLETED once completed.${OUT_OF_SCOPE}`,
        querystring: CustomerIdQuery,
        params: ResetParams,
        response: { 200: TwoFactorResetStatus, ...errorResponses(404, 409) },
      },
    },
    async (req) => getResetStatus(store.db, authOf(req).platform.id, nowOf(req, clock), req.query.customerId, req.params.resetId),
  );

  app.post(
    '/sca/factors/reset/:resetId/complete',
    {
      config: { auth: 'basic' },
      preValidation: async (req) => {
        if (req.body === undefined || req.body === null) req.body = {};
      },
      schema: {
        tags,
        operationId: 'completeTwoFactorReset',
        summary: 'Complete a 2FA reset',
        description: `Once LIVENESS_PASSED: the factor is cleared (SMS_OTP: the body's mobile becomes the customer's number) and the login is unlocked.${OUT_OF_SCOPE}`,
        querystring: CustomerIdQuery,
        params: ResetParams,
        body: TwoFactorResetCompleteRequest,
        response: { 204: NoContent, ...errorResponses(404, 409) },
      },
    },
    async (req, reply) => {
      await completeResetFlow(store, authOf(req).platform.id, nowOf(req, clock), req.query.customerId, req.params.resetId, req.body);
      return reply.code(204).send(null);
    },
  );

  for (const change of ['TRUST', 'UNTRUST'] as const) {
    const path = change === 'TRUST' ? 'trust' : 'untrust';
    const Op = change === 'TRUST' ? 'Trust' : 'Untrust';
    app.post(
      `/customers/external-accounts/:externalAccountId/${path}`,
      {
        config: { auth: 'basic' },
        schema: {
          tags,
          operationId: `startBeneficiary${Op}`,
          summary: `Start ${path}ing a beneficiary`,
          description: `Returns the challenge to confirm the change with (5 minutes). Payouts to a trusted beneficiary skip the per-payment challenge.${OUT_OF_SCOPE}`,
          params: ExternalAccountIdParams,
          response: { 200: BeneficiaryTrustStart, ...errorResponses(404, 409) },
        },
      },
      async (req) => startTrustChange(store, authOf(req).platform.id, nowOf(req, clock), req.params.externalAccountId, change),
    );
    app.post(
      `/customers/external-accounts/:externalAccountId/${path}/confirm`,
      {
        config: { auth: 'basic' },
        schema: {
          tags,
          operationId: `confirmBeneficiary${Op}`,
          summary: `Confirm ${path}ing a beneficiary`,
          description: `The challenge's proof (sandbox code 123456). Wrong proofs count towards the lock (423 ACCOUNT_LOCKED).${OUT_OF_SCOPE}`,
          params: ExternalAccountIdParams,
          body: BeneficiaryTrustConfirmRequest,
          response: { 200: BeneficiaryTrustConfirm, ...errorResponses(404, 409, 423) },
        },
      },
      async (req) => confirmTrustChange(store, authOf(req).platform.id, nowOf(req, clock), req.params.externalAccountId, change, req.body),
    );
  }

  app.post(
    '/quotes/:quoteId/authorize',
    {
      config: { auth: 'basic', permission: 'TRANSACT' },
      schema: {
        tags,
        operationId: 'authorizeQuote',
        summary: 'Authorize a quote’s SCA challenge',
        description:
          'Answer the challenge of a PENDING_AUTHORIZATION quote (sandbox code 123456). Needs a live SCA session (409 SCA_SESSION_REQUIRED); a locked login is 423 ACCOUNT_LOCKED. A cross-currency payment takes two authorizations (CURRENCY_CONVERSION, then PAYOUT): loop while the quote is PENDING_AUTHORIZATION. The last one releases the payment (a REALTIME_FUNDING quote gets its paymentInstructions). Honours Idempotency-Key.' +
          OUT_OF_SCOPE,
        params: QuoteParams,
        body: ScaAuthorization,
        response: { 200: Quote, ...errorResponses(403, 404, 409, 423) },
      },
    },
    async (req) => authorizeQuote(deps, authOf(req).platform, nowOf(req, clock), req.params.quoteId, req.body),
  );

  app.post(
    '/quotes/:quoteId/authorize/resend',
    {
      config: { auth: 'basic', permission: 'TRANSACT' },
      schema: {
        tags,
        operationId: 'resendQuoteScaCode',
        summary: 'Resend a quote’s SCA challenge code',
        description: `Send the SMS code of the current challenge again; its expiresAt is not extended. At most 5 resends per challenge (429 with Retry-After).${OUT_OF_SCOPE}`,
        params: QuoteParams,
        response: { 204: NoContent, ...errorResponses(404, 409, 429) },
      },
    },
    async (req, reply) => {
      await withRetryAfter(reply, () => resendQuoteCode(store, authOf(req).platform.id, nowOf(req, clock), req.params.quoteId));
      return reply.code(204).send(null);
    },
  );
};
