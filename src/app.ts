import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import swagger, { type SwaggerTransform } from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { AREAS } from './areas.js';
import { API_VERSION } from './config.js';
import { type AuthContext, allows, authenticate, authenticateCached, type Throttled } from './kernel/auth.js';
import { AuthThrottle } from './kernel/auth-throttle.js';
import { iso, platformNowMs, type Clock } from './kernel/clock.js';
import { ApiError, apiError } from './kernel/errors.js';
import { declaredAnswer } from './kernel/references.js';
import { makeClientErrorHandler, requestTimeoutOptions } from './kernel/client-errors.js';
import { isStoreUnavailable, STORE_RETRY_AFTER_S, unavailableMessage } from './kernel/db/unavailable.js';
import { claimKey, completeKey, type IdempotencyContext, LEASE_RENEW_MS, releaseKey, renewLeases, requestHash, runClaimed } from './kernel/idempotency.js';
import type { AppDeps } from './kernel/deps.js';
import { openSealed } from './kernel/sealed.js';
import { closeQueryString, lazySerializerFactory, refuseNul, validatorCompiler, validatorFactory } from './kernel/validation.js';
import { nameSchemas } from './kernel/openapi.js';
import { batchPerTurn } from './kernel/turn-batch.js';
import { NAMED_SCHEMAS, WEBHOOK_SIGNATURE_SCHEME, nameOfTitle, webhooksSection } from './openapi-schemas.js';

export type App = FastifyInstance;

const BODY_LIMIT = 1024 * 1024;
const VERSION_PREFIX = `/${API_VERSION}`;

export async function buildApp(deps: AppDeps, opts: { logger?: boolean | { level: string } } = {}): Promise<FastifyInstance> {
  const app = Fastify({
    logger: opts.logger ?? { level: deps.config.logLevel },
    bodyLimit: BODY_LIMIT,
    ajv: { customOptions: { strict: false } },
    // Validators and response serializers compiled on a route's first use, not at start-up
    // (kernel/validation.ts); Fastify's default Ajv compiler is then never loaded.
    schemaController: { compilersFactory: { buildSerializer: lazySerializerFactory, buildValidator: validatorFactory } },
    routerOptions: { ignoreTrailingSlash: true },
    forceCloseConnections: false,
    // A request (headers and body) must arrive within PAYMENTS_REQUEST_TIMEOUT_MS; a body that
    // trickles in forever is answered 408 in the envelope (kernel/client-errors.ts).
    requestTimeout: deps.config.requestTimeoutMs,
    http: requestTimeoutOptions(deps.config.requestTimeoutMs),
    // Errors of the HTTP layer (headers too large, the timeout, bytes that are not HTTP) get
    // the envelope with Connection: close, not Node's or Fastify's own bodies.
    clientErrorHandler: makeClientErrorHandler(deps.config.requestTimeoutMs),
    // While stopping, server.ts answers new requests 503 SERVICE_UNAVAILABLE in the envelope.
    return503OnClosing: false,
    // Errors raised before routing (a URL that does not decode) get the envelope too.
    frameworkErrors: (err, req, reply) => {
      sendError(err, req, reply);
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.decorate('deps', deps);
  // The first hook of every request: the requests of one event-loop turn go on together, from
  // the end of its poll phase (kernel/turn-batch.ts; about a third less CPU per read, issue 35).
  const inTurnBatch = batchPerTurn();
  app.addHook('onRequest', (_req, _reply, done) => inTurnBatch(done as () => void));
  // Each area's hooks on the kernel's seams, its jobs and listeners (src/areas.ts).
  for (const area of AREAS) area.wire?.(deps);
  app.decorateRequest('auth', null);
  app.decorateRequest('idempotency', null);
  // The claims this process's requests hold: their leases are renewed while they run, so a
  // retry never takes over the claim of a request that may still commit (kernel/idempotency.ts).
  const heldClaims = new Set<string>();
  const leaseTimer = setInterval(() => {
    if (heldClaims.size === 0) return;
    renewLeases(deps.store.db, [...heldClaims], Date.now()).catch((err: unknown) => app.log.warn({ err }, 'renewing Idempotency-Key leases failed'));
  }, LEASE_RENEW_MS);
  leaseTimer.unref();
  app.addHook('onClose', async () => clearInterval(leaseTimer));
  app.setValidatorCompiler(validatorCompiler);
  // U+0000 in a path parameter, query value or JSON string: 400 before any schema or store
  // sees it (PostgreSQL cannot store it), on every route (kernel/validation.ts).
  app.addHook('preValidation', (req, _reply, done) => done(refuseNul(req)));

  // JSON bodies: an empty body is no body (endpoints such as execute take none).
  const defaultJson = app.getDefaultJsonParser('error', 'ignore');
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    if (body === '' || (typeof body === 'string' && body.trim() === '')) return done(null, undefined);
    defaultJson(req, body as string, (err, value) => {
      if (err) return done(apiError(400, 'INVALID_REQUEST_FORMAT', `Malformed JSON body: ${err.message}`), undefined);
      done(null, value);
    });
  });

  app.setErrorHandler((err: FastifyError | ApiError, req, reply) => sendError(err, req, reply));
  app.setNotFoundHandler((req, reply) => notFound(app, req, reply));

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Payments Service API',
        version: API_VERSION,
        description: 'The Payments Service API with its sandbox. Amounts are integers in the smallest unit of their currency.',
      },
      servers: [{ url: VERSION_PREFIX, description: 'This server (the version is part of the base URL)' }],
      components: {
        securitySchemes: {
          BasicAuth: { type: 'http', scheme: 'basic', description: 'API token: `<api token id>:<api client secret>`' },
          AgentAuth: { type: 'http', scheme: 'bearer', description: 'Agent access token from redeeming a device code' },
          WebhookSignature: WEBHOOK_SIGNATURE_SCHEME,
        },
      },
      security: [{ BasicAuth: [] }, { AgentAuth: [] }],
      webhooks: webhooksSection() as Record<string, never>,
    },
    // Named schemas, $refs and the shared error responses (kernel/openapi.ts, registry in
    // openapi-schemas.ts). Runs once: @fastify/swagger caches the document it returns.
    transformObject: (documentObject) =>
      nameSchemas((documentObject as { openapiObject: Parameters<typeof nameSchemas>[0] }).openapiObject, { registered: NAMED_SCHEMAS, nameOfTitle }) as never,
    transform: openapiTransform,
  });
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { docExpansion: 'list', deepLinking: true } });

  // Liveness: the process answers. Whether it can serve (the store answers, migrations,
  // a platform) is GET /readyz (operator/ops): a store outage is 503 there, 200 here, so a
  // supervisor does not restart a process that recovers by itself when the store returns.
  app.get('/healthz', { schema: { hide: true } }, async (_req, reply) => reply.send({ status: 'ok' }));

  // App-wide hooks of the areas, e.g. the request log and the per-route metrics
  // (sandbox/request-log: memory only, never awaited).
  for (const area of AREAS) area.install?.(app, deps);

  if (deps.config.adminKey) {
    for (const area of AREAS) for (const plugin of area.admin ?? []) await app.register(plugin, { prefix: '/admin' });
  }
  for (const area of AREAS) for (const plugin of area.pages ?? []) await app.register(plugin);

  // Failed credentials, per token and per client address (kernel/auth-throttle.ts).
  const authThrottle = new AuthThrottle(deps.clock);
  await app.register(
    async (api) => {
      // Every GET takes only the query parameters it declares (kernel/validation.ts).
      api.addHook('onRoute', closeQueryString);
      // A POST's handler runs in its Idempotency-Key claim's context (kernel/idempotency.ts),
      // so the service's effectTransaction stores the answer with the effect.
      api.addHook('onRoute', (route) => {
        const methods = Array.isArray(route.method) ? route.method : [route.method];
        if (!methods.includes('POST')) return;
        const handler = route.handler;
        route.handler = function claimed(this: unknown, req: FastifyRequest, reply: FastifyReply) {
          const ctx = req.idempotency;
          return ctx ? runClaimed(ctx, () => handler.call(this as never, req, reply)) : handler.call(this as never, req, reply);
        } as typeof route.handler;
      });
      // The hooks of every request answer at once when they can (known credentials, no
      // Idempotency-Key), and return a promise only when they must wait.
      api.addHook('onRequest', (req, reply, done) => {
        const mode = req.routeOptions.config.auth ?? 'basic-or-agent';
        if (mode === 'none') return done();
        const known = authenticateCached(deps.store, req, mode, authThrottle);
        if (known) return done(authorize(req, known));
        return (async () => {
          let ctx: AuthContext;
          try {
            ctx = await authenticate(deps.store, req, mode, deps.agentResolver, authThrottle);
          } catch (err) {
            if (err instanceof ApiError && err.status === 429) reply.header('retry-after', String((err as Throttled).retryAfter));
            throw err;
          }
          const err = authorize(req, ctx);
          if (err) throw err;
        })() as unknown as void;
      });
      // Before validation, so a request rejected by its schema is a 4xx stored under its key
      // like any other (and the hash covers the body as sent, before defaults are applied).
      // After validation: a request its schema rejects never started, so it stores nothing
      // and the key stays free for the corrected request.
      api.addHook('preHandler', (req, reply, done) => {
        if (req.method !== 'POST' || !req.auth || req.headers['idempotency-key'] === undefined) return done();
        return idempotencyPreHandler(req, reply) as unknown as void;
      });
      api.addHook('onSend', (req, reply, payload, done) => {
        if (!req.idempotency) return done(null, payload);
        return idempotencyOnSend(req, reply, payload) as unknown as void;
      });

      // Generated on the first request (a few hundred ms), then served as the same text.
      let openapiJson: string | undefined;
      api.get('/openapi.json', { config: { auth: 'none' }, schema: { hide: true } }, async (_req, reply) =>
        reply.type('application/json; charset=utf-8').send((openapiJson ??= JSON.stringify(app.swagger()))),
      );
      for (const area of AREAS) for (const plugin of area.api ?? []) await api.register(plugin);
    },
    { prefix: VERSION_PREFIX },
  );

  /** The caller's permission for the route: an error to answer, or undefined. */
  function authorize(req: FastifyRequest, auth: AuthContext): ApiError | undefined {
    req.auth = auth;
    const needed = req.routeOptions.config.permission ?? (req.method === 'GET' || req.method === 'HEAD' ? 'VIEW' : 'MANAGE');
    if (allows(auth.permissions, needed)) return undefined;
    return apiError(403, 'FORBIDDEN', `This API token lacks the ${needed} permission`, { required: needed, granted: [...auth.permissions] });
  }

  async function idempotencyPreHandler(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    if (req.method !== 'POST' || !req.auth) return;
    const raw = req.headers['idempotency-key'];
    if (raw === undefined) return;
    const key = Array.isArray(raw) ? raw[0]! : raw;
    if (key.length < 1 || key.length > 255) {
      throw apiError(400, 'INVALID_INPUT', 'Idempotency-Key must be 1 to 255 characters', {
        errors: [{ field: 'Idempotency-Key', constraint: { minLength: 1, maxLength: 255 }, message: 'must be 1 to 255 characters long' }],
      });
    }
    const platformId = req.auth.platform.id;
    const hash = requestHash(req.method, req.url, req.body);
    const deadline = Date.now() + 10_000;
    for (;;) {
      const nowMs = platformNowMs(deps.clock, Number(req.auth.platform.clock_offset_ms));
      const claim = await claimKey(deps.store.db, platformId, key, hash, nowMs, Date.now());
      if (claim.kind === 'new') {
        const ctx: IdempotencyContext = { platformId, key, token: claim.token, answered: false };
        const status = successStatusOf(req);
        if (status !== undefined) ctx.render = (value) => storedAnswer(req, reply, ctx, status, value);
        req.idempotency = ctx;
        heldClaims.add(claim.token);
        return;
      }
      if (claim.kind === 'replay') {
        const body = req.routeOptions.config.sealStoredAnswer ? openSealed(claim.body, storedAnswerContext(platformId, key)) : claim.body;
        if (body === undefined) {
          throw apiError(409, 'CONFLICT', `The answer stored under Idempotency-Key "${key}" was sealed with another data key and cannot be replayed; use a new key`);
        }
        reply.header('idempotent-replayed', 'true').code(claim.status);
        if (claim.contentType) reply.type(claim.contentType);
        return reply.send(body);
      }
      if (claim.kind === 'mismatch') {
        throw apiError(400, 'INVALID_INPUT', `Idempotency-Key "${key}" was already used with a different request`, {
          errors: [{ field: 'Idempotency-Key', message: 'was already used with a different method, path or body' }],
        });
      }
      if (Date.now() > deadline) {
        throw apiError(409, 'CONFLICT', `A request with Idempotency-Key "${key}" is still in progress; retry later`);
      }
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  async function idempotencyOnSend(req: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
    const claim = req.idempotency;
    if (!claim) return payload;
    req.idempotency = null;
    try {
      // Answered with its effect already (effectTransaction): the stored answer stands, and
      // these fenced writes find the key done and change nothing.
      // A signed-retry challenge (202) and a refused signature (401) are not answers to keep:
      // the signed retry carries the same Idempotency-Key (docs/embedded-wallets.md).
      if (reply.statusCode >= 500 || reply.statusCode === 401 || (reply.statusCode === 202 && signedRetryRoute(req))) {
        // The store may be what failed (503): the key's lease then runs out by itself.
        // Never an error here: the answer (an envelope) is already decided, and a hook that
        // throws while an error is sent turns it into Fastify's own 500 body.
        await releaseKey(deps.store.db, claim).catch((err: unknown) => {
          if (isStoreUnavailable(err)) req.log.warn({ err: (err as Error).message }, 'Idempotency-Key not released (store unavailable); its lease will run out');
          else req.log.error({ err }, 'Idempotency-Key not released; its lease will run out');
        });
      } else {
        const type = reply.getHeader('content-type');
        const raw = typeof payload === 'string' ? payload : payload === undefined || payload === null ? '' : String(payload);
        // A store that cannot write now: the answer goes out unstored (an effect stored its own
        // with it, effectTransaction); the claim's lease runs out and a retry runs again.
        await completeKey(deps.store.db, claim, reply.statusCode, storedBody(req, claim, raw), typeof type === 'string' ? type : null).catch((err: unknown) => {
          if (!isStoreUnavailable(err)) throw err;
          req.log.warn({ err: (err as Error).message }, 'Idempotency-Key answer not stored (store unavailable); its lease will run out');
        });
      }
    } finally {
      heldClaims.delete(claim.token);
    }
    return payload;
  }

  /** The text stored under a key for an answer: without the route's secret fields, sealed when the route says so. */
  function storedBody(req: FastifyRequest, claim: IdempotencyContext, body: string): string {
    // Secrets are shown once and never stored: the stored answer goes without them, so
    // a replay names the same resource without repeating its secret.
    const secrets = req.routeOptions.config.secretFields;
    if (secrets && body) body = withoutFields(body, secrets);
    if (req.routeOptions.config.sealStoredAnswer) body = deps.sealer.seal(body, storedAnswerContext(claim.platformId, claim.key));
    return body;
  }

  /** The route's answer to `value` as onSend would store it: serialized with the route's response schema for `status`. */
  function storedAnswer(req: FastifyRequest, reply: FastifyReply, claim: IdempotencyContext, status: number, value: unknown) {
    if (status === 204) return { status, body: '', contentType: null };
    const previous = reply.statusCode;
    reply.code(status);
    try {
      return { status, body: storedBody(req, claim, reply.serialize(value) as string), contentType: 'application/json; charset=utf-8' };
    } finally {
      reply.code(previous);
    }
  }

  return app;
}

/** The route's one 2xx status (its response schemas), or undefined when it has none or several. */
function successStatusOf(req: FastifyRequest): number | undefined {
  const response = (req.routeOptions.schema as { response?: Record<string, unknown> } | undefined)?.response;
  // A signed-retry challenge (202) is never stored, so it is not the success answer.
  const signed = signedRetryRoute(req);
  const ok = Object.keys(response ?? {}).filter((s) => /^2\d\d$/.test(s) && !(signed && s === '202'));
  return ok.length === 1 ? Number(ok[0]) : undefined;
}

/**
 * A route whose 202 is a signed-retry challenge (embedded wallets: payloadToSign and
 * requestId; docs/embedded-wallets.md): the signed retry carries the same Idempotency-Key,
 * so that 202 is not an answer to keep. Every other 202 (a bulk import accepted, a card
 * simulation) is an answer like any other, stored and replayed.
 */
function signedRetryRoute(req: FastifyRequest): boolean {
  const response = (req.routeOptions.schema as { response?: Record<string, { properties?: Record<string, unknown> }> } | undefined)?.response;
  return response?.['202']?.properties?.['payloadToSign'] !== undefined;
}

/** The additional authenticated data of a sealed stored answer: its table, platform and key. */
function storedAnswerContext(platformId: string, key: string): string {
  return `idempotency_keys.response_body:${platformId}:${key}`;
}

function withoutFields(json: string, fields: readonly string[]): string {
  try {
    const value = JSON.parse(json) as Record<string, unknown>;
    for (const f of fields) delete value[f];
    return JSON.stringify(value);
  } catch {
    return json;
  }
}

const FRAMEWORK_400: Record<string, string> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'Unsupported Content-Type: send application/json',
  FST_ERR_CTP_BODY_TOO_LARGE: `Request body is larger than the limit of ${BODY_LIMIT} bytes`,
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'Content-Length does not match the body',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'Empty JSON body',
  FST_ERR_CTP_INVALID_JSON_BODY: 'Malformed JSON body',
  FST_ERR_CTP_EMPTY_TYPE: 'Missing Content-Type',
  FST_ERR_CTP_INVALID_TYPE: 'Invalid Content-Type',
  FST_ERR_BAD_URL: 'Malformed URL: the path is not valid percent-encoding',
};

function sendError(err: FastifyError | ApiError, req: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (!(err instanceof ApiError) && isStoreUnavailable(err)) {
    // The database cannot be reached or written now (stopped, restarting, connections cut, a full disk): not a bug.
    req.log.warn({ err: (err as Error).message, code: (err as { code?: unknown }).code }, 'store unavailable');
    err = apiError(503, 'SERVICE_UNAVAILABLE', unavailableMessage(err));
  }
  if (err instanceof ApiError) {
    const answer = declaredAnswer(err, req);
    if (answer.status === 503) {
      req.log.warn(answer.message);
      if (!reply.hasHeader('retry-after')) reply.header('retry-after', String(STORE_RETRY_AFTER_S));
    }
    else if (answer.status >= 500 && answer.status !== 501) req.log.error({ err: answer }, answer.message);
    return reply.code(answer.status).type('application/json').send(answer.toEnvelope());
  }
  const fe = err as FastifyError;
  if (fe.code && FRAMEWORK_400[fe.code]) {
    const details: Record<string, unknown> = { reason: fe.code };
    if (fe.code === 'FST_ERR_CTP_BODY_TOO_LARGE') details.limitBytes = BODY_LIMIT;
    if (fe.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') details.contentType = req.headers['content-type'] ?? null;
    return reply.code(400).type('application/json').send({ status: 400, code: 'INVALID_REQUEST_FORMAT', message: FRAMEWORK_400[fe.code], details });
  }
  if (fe instanceof SyntaxError || (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500)) {
    return reply.code(400).type('application/json').send({ status: 400, code: 'INVALID_REQUEST_FORMAT', message: fe.message || 'Malformed request' });
  }
  req.log.error({ err: fe }, 'unhandled error');
  return reply.code(500).type('application/json').send({ status: 500, code: 'INTERNAL_ERROR', message: 'Internal error; it has been logged' });
}

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

function notFound(app: FastifyInstance, req: FastifyRequest, reply: FastifyReply): FastifyReply {
  const path = req.url.split('?')[0] ?? '/';
  const version = /^\/(\d{4}-\d{2}-\d{2})(\/|$)/.exec(path)?.[1];
  if (version && version !== API_VERSION) {
    return reply.code(404).send({
      status: 404,
      code: 'REFERENCE_NOT_FOUND',
      message: `API version ${version} is not served here; the supported version is ${API_VERSION} (base URL …/${API_VERSION})`,
      details: { requestedVersion: version, supportedVersions: [API_VERSION] },
    });
  }
  const allowed = METHODS.filter((m) => m !== req.method && app.findRoute({ method: m, url: path }));
  if (allowed.length > 0) {
    return reply
      .code(405)
      .header('allow', allowed.join(', '))
      .send({ status: 405, code: 'METHOD_NOT_ALLOWED', message: `${req.method} is not allowed on ${path}; allowed: ${allowed.join(', ')}`, details: { allowed } });
  }
  const hint = path.startsWith(`${VERSION_PREFIX}/`) || path === VERSION_PREFIX ? '' : ` (API routes live under ${VERSION_PREFIX})`;
  return reply.code(404).send({ status: 404, code: 'REFERENCE_NOT_FOUND', message: `No route ${req.method} ${path}${hint}` });
}

/**
 * A route as the OpenAPI document shows it: routes outside the version prefix hidden, the
 * prefix stripped (it is the server URL), `security` from the route's auth mode, and
 * `x-extension: true` on a route with `config.extension`.
 */
export const openapiTransform: SwaggerTransform = ({ schema, url, route }) => {
  if (!url.startsWith(`${VERSION_PREFIX}/`) || url === `${VERSION_PREFIX}/openapi.json`) {
    return { schema: { ...(schema ?? {}), hide: true } as typeof schema, url };
  }
  // The document's security follows the route's auth mode, so the two cannot drift.
  const mode = (route.config as { auth?: string } | undefined)?.auth ?? 'basic-or-agent';
  const security: Array<Record<string, string[]>> =
    // 'basic-or-agent' takes Basic only since agents exist (an agent token works only on 'agent' routes).
    mode === 'none' ? [] : mode === 'agent' ? [{ AgentAuth: [] }] : [{ BasicAuth: [] }];
  const extension = (route.config as { extension?: boolean } | undefined)?.extension ? { 'x-extension': true } : {};
  return { schema: { ...(schema ?? {}), security, ...extension } as typeof schema, url: url.slice(VERSION_PREFIX.length) };
};

/** Now on a platform's clock, for services that hold a platform row. */
export function platformNow(clock: Clock, offsetMs: number): { ms: number; at: string } {
  const ms = platformNowMs(clock, offsetMs);
  return { ms, at: iso(ms) };
}
