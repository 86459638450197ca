import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { authOf, errorResponses, NoContent, nowOf, requestIdHeader, signedHeadersOf } from '../../kernel/http.js';
import { InternalAccount } from './shapes.js';
import {
  AccountQuery,
  AuthCredentialChallengeRequest,
  AuthCredentialChallengeResponse,
  AuthCredentialCreateRequest,
  AuthCredentialListResponse,
  AuthCredentialVerifyRequest,
  AuthMethodResponse,
  AuthSession,
  AuthSessionRefreshRequest,
  AuthSignedRequestChallenge,
  DelegatedKey,
  DelegatedKeyCreateRequest,
  DelegatedKeyListResponse,
  DelegatedKeyQuery,
  IdParams,
  InternalAccountExportRequest,
  InternalAccountExportResponse,
  InternalAccountUpdateRequest,
  PasskeySettings,
  SessionListResponse,
  SignedHeaders,
  SignedRequestChallenge,
} from './schemas.js';
import { allowedOrigins, challengeCredential, createCredential, listCredentials, revokeCredential, setAllowedOrigins, verifyCredential } from './credentials.js';
import { createDelegatedKey, getDelegatedKey, listDelegatedKeys, revokeDelegatedKey } from './delegated-keys.js';
import { onCustomerChange } from './provisioning.js';
import { listSessions, refreshSession, revokeSession } from './sessions.js';
import { exportWallet, updateWallet } from './wallet-actions.js';

const tags = ['Embedded Wallet Auth'];


const signedNote = ' Signed action: the first call (no Service-Wallet-Signature, no Request-Id) answers 202 with payloadToSign and requestId; the retry with the same body carries the stamp and the Request-Id.';

export const embeddedWalletRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { store, clock, sealer, hooks } = app.deps;
  const deps = { store, sealer };
  hooks.customerCreated.push((e) => onCustomerChange(sealer, e, { created: true }));
  hooks.customerUpdated.push((e) => onCustomerChange(sealer, e));
  // The body of these operations is optional: no body reads as {}.
  const optionalBody = async (req: FastifyRequest) => {
    if (req.body === undefined || req.body === null) req.body = {};
  };

  app.post(
    '/auth/credentials',
    {
      config: { auth: 'basic' },
      schema: {
        tags,
        operationId: 'createAuthCredential',
        summary: 'Register an authentication credential',
        description: 'Adds an EMAIL_OTP, SMS_OTP, OAUTH or PASSKEY credential to an EMBEDDED_WALLET account (one EMAIL_OTP and one SMS_OTP at most).' + signedNote,
        headers: SignedHeaders,
        body: AuthCredentialCreateRequest,
        response: { 201: AuthMethodResponse, 202: AuthSignedRequestChallenge, ...errorResponses(404) },
      },
    },
    async (req, reply) => {
      const r = await createCredential(deps, authOf(req).platform, nowOf(req, clock), req.body, signedHeadersOf(req));
      if (r.status === 202) requestIdHeader(reply, r.body);
      return reply.code(r.status).send(r.body);
    },
  );

  app.get(
    '/auth/credentials',
    {
      config: { auth: 'basic' },
      schema: { tags, operationId: 'listAuthCredentials', summary: 'List authentication credentials', querystring: AccountQuery, response: { 200: AuthCredentialListResponse, ...errorResponses() } },
    },
    async (req) => listCredentials(store.db, authOf(req).platform.id, req.query.accountId),
  );

  app.post(
    '/auth/credentials/:id/challenge',
    {
      config: { auth: 'basic' },
      preValidation: optionalBody,
      schema: {
        tags,
        operationId: 'challengeAuthCredential',
        summary: 'Issue a credential challenge',
        description: 'EMAIL_OTP / SMS_OTP: a new OTP and its otpEncryptionTargetBundle. PASSKEY: a WebAuthn challenge bound to clientPublicKey, with the requestId to echo on verify.',
        params: IdParams,
        body: AuthCredentialChallengeRequest,
        response: { 200: AuthCredentialChallengeResponse, ...errorResponses(404) },
      },
    },
    async (req, reply) => {
      const r = await challengeCredential(deps, authOf(req).platform.id, nowOf(req, clock), req.params.id, req.body);
      requestIdHeader(reply, r); // a passkey challenge: verify echoes it
      return r;
    },
  );

  app.post(
    '/auth/credentials/:id/verify',
    {
      config: { auth: 'basic' },
      schema: {
        tags,
        operationId: 'verifyAuthCredential',
        summary: 'Verify a credential and open a session',
        description: 'OTP: 202 with the verification token to stamp with the TEK, then the signed retry answers the session. PASSKEY (with the challenge’s Request-Id) and OAUTH: the session at once, its key sealed to clientPublicKey.',
        headers: SignedHeaders,
        params: IdParams,
        body: AuthCredentialVerifyRequest,
        response: { 200: AuthSession, 202: AuthSignedRequestChallenge, ...errorResponses(404) },
      },
    },
    async (req, reply) => {
      const r = await verifyCredential(deps, authOf(req).platform.id, nowOf(req, clock), req.params.id, req.body, signedHeadersOf(req));
      if (r.status === 202) requestIdHeader(reply, r.body);
      return reply.code(r.status).send(r.body);
    },
  );

  app.delete(
    '/auth/credentials/:id',
    {
      config: { auth: 'basic' },
      schema: {
        tags,
        operationId: 'revokeAuthCredential',
        summary: 'Revoke a credential',
        description: 'Signed by a session of another credential of the wallet; the wallet keeps at least one credential.' + signedNote,
        headers: SignedHeaders,
        params: IdParams,
        response: { 202: AuthSignedRequestChallenge, 204: NoContent, ...errorResponses(404) },
      },
    },
    async (req, reply) => {
      const c = await revokeCredential(deps, authOf(req).platform.id, nowOf(req, clock), req.params.id, signedHeadersOf(req));
      if (c) requestIdHeader(reply, c);
      return c ? reply.code(202).send(c) : reply.code(204).send(null);
    },
  );

  app.get(
    '/auth/sessions',
    {
      config: { auth: 'basic' },
      schema: { tags, operationId: 'listAuthSessions', summary: 'List active sessions', querystring: AccountQuery, response: { 200: SessionListResponse, ...errorResponses() } },
    },
    async (req) => listSessions(store.db, authOf(req).platform.id, req.query.accountId, nowOf(req, clock)),
  );

  app.delete(
    '/auth/sessions/:id',
    {
      config: { auth: 'basic' },
      schema: {
        tags,
        operationId: 'revokeAuthSession',
        summary: 'Revoke a session',
        description: 'Signed by any active session of the wallet (itself included).' + signedNote,
        headers: SignedHeaders,
        params: IdParams,
        response: { 202: AuthSignedRequestChallenge, 204: NoContent, ...errorResponses(404) },
      },
    },
    async (req, reply) => {
      const c = await revokeSession(deps, authOf(req).platform.id, nowOf(req, clock), req.params.id, signedHeadersOf(req));
      if (c) requestIdHeader(reply, c);
      return c ? reply.code(202).send(c) : reply.code(204).send(null);
    },
  );

  app.post(
    '/auth/sessions/:id/refresh',
    {
      config: { auth: 'basic' },
      schema: {
        tags,
        operationId: 'refreshAuthSession',
        summary: 'Refresh a session',
        description: 'Signed by the session itself: answers a new session whose key is sealed to clientPublicKey; the old one ends.' + signedNote,
        headers: SignedHeaders,
        params: IdParams,
        body: AuthSessionRefreshRequest,
        response: { 201: AuthSession, 202: SignedRequestChallenge, ...errorResponses(404) },
      },
    },
    async (req, reply) => {
      const r = await refreshSession(deps, authOf(req).platform.id, nowOf(req, clock), req.params.id, req.body.clientPublicKey, signedHeadersOf(req));
      if ('challenge' in r) requestIdHeader(reply, r.challenge);
      return 'challenge' in r ? reply.code(202).send(r.challenge) : reply.code(201).send(r.session);
    },
  );

  app.post(
    '/auth/delegated-keys',
    {
      config: { auth: 'basic' },
      schema: {
        tags,
        operationId: 'createDelegatedKey',
        summary: 'Create a delegated signing key',
        description: 'Three legs, the same body each time: 202, signed retry 202 (the key exists, PENDING), signed retry 201 (ACTIVE). One ACTIVE key per card funding source.',
        headers: SignedHeaders,
        body: DelegatedKeyCreateRequest,
        response: { 201: DelegatedKey, 202: SignedRequestChallenge, ...errorResponses(404, 409) },
      },
    },
    async (req, reply) => {
      const r = await createDelegatedKey(deps, authOf(req).platform.id, nowOf(req, clock), req.body, signedHeadersOf(req));
      if (r.status === 202) requestIdHeader(reply, r.body);
      return reply.code(r.status).send(r.body);
    },
  );

  app.get(
    '/auth/delegated-keys',
    {
      config: { auth: 'basic' },
      schema: { tags, operationId: 'listDelegatedKeys', summary: 'List delegated signing keys', querystring: DelegatedKeyQuery, response: { 200: DelegatedKeyListResponse, ...errorResponses() } },
    },
    async (req) => listDelegatedKeys(store.db, authOf(req).platform.id, req.query),
  );

  app.get(
    '/auth/delegated-keys/:id',
    {
      config: { auth: 'basic' },
      schema: { tags, operationId: 'getDelegatedKeyById', summary: 'Get a delegated signing key', params: IdParams, response: { 200: DelegatedKey, ...errorResponses(404) } },
    },
    async (req) => getDelegatedKey(store.db, authOf(req).platform.id, req.params.id),
  );

  app.delete(
    '/auth/delegated-keys/:id',
    {
      config: { auth: 'basic' },
      schema: { tags, operationId: 'revokeDelegatedKey', summary: 'Revoke a delegated signing key', params: IdParams, response: { 204: NoContent, ...errorResponses(404) } },
    },
    async (req, reply) => {
      await revokeDelegatedKey(store.db, authOf(req).platform.id, nowOf(req, clock), req.params.id);
      return reply.code(204).send(null);
    },
  );

  app.patch(
    '/internal-accounts/:id',
    {
      config: { auth: 'basic' },
      schema: {
        tags: ['Internal Accounts'],
        operationId: 'updateInternalAccount',
        summary: 'Update an embedded wallet (privacy)',
        description: 'Sets privateEnabled of an EMBEDDED_WALLET account.' + signedNote,
        headers: SignedHeaders,
        params: IdParams,
        body: InternalAccountUpdateRequest,
        response: { 200: InternalAccount, 202: SignedRequestChallenge, ...errorResponses(404) },
      },
    },
    async (req, reply) => {
      const r = await updateWallet(deps, authOf(req).platform.id, nowOf(req, clock), req.params.id, req.body, signedHeadersOf(req));
      if ('challenge' in r) requestIdHeader(reply, r.challenge);
      return 'challenge' in r ? reply.code(202).send(r.challenge) : reply.code(200).send(r.account);
    },
  );

  app.post(
    '/internal-accounts/:id/export',
    {
      config: { auth: 'basic' },
      schema: {
        tags: ['Internal Accounts'],
        operationId: 'exportInternalAccount',
        summary: 'Export an embedded wallet',
        description: 'The wallet mnemonic HPKE-sealed to clientPublicKey.' + signedNote,
        headers: SignedHeaders,
        params: IdParams,
        body: InternalAccountExportRequest,
        response: { 200: InternalAccountExportResponse, 202: SignedRequestChallenge, ...errorResponses(404) },
      },
    },
    async (req, reply) => {
      const r = await exportWallet(deps, authOf(req).platform.id, nowOf(req, clock), req.params.id, req.body.clientPublicKey, signedHeadersOf(req));
      if ('challenge' in r) requestIdHeader(reply, r.challenge);
      return 'challenge' in r ? reply.code(202).send(r.challenge) : reply.code(200).send(r.body);
    },
  );

  app.get(
    '/auth/passkey-settings',
    {
      config: { auth: 'basic', extension: true },
      schema: { tags, operationId: 'getPasskeySettings', summary: 'Accepted WebAuthn origins', response: { 200: PasskeySettings, ...errorResponses() } },
    },
    async (req) => ({ allowedOrigins: await allowedOrigins(store.db, authOf(req).platform.id) }),
  );

  app.put(
    '/auth/passkey-settings',
    {
      config: { auth: 'basic', extension: true },
      schema: { tags, operationId: 'setPasskeySettings', summary: 'Set the accepted WebAuthn origins', body: PasskeySettings, response: { 200: PasskeySettings, ...errorResponses(403) } },
    },
    async (req) => setAllowedOrigins(store.db, authOf(req).platform.id, req.body.allowedOrigins, nowOf(req, clock).at),
  );
};
