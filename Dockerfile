# syntax=docker/dockerfile:1
# Payments Service (API 2025-10-13) sandbox as a container image. README "Run it in a
# container" shows docker run, compose and CI services; docs/decisions.md (issue 36) why.
#
#   docker build -t payments-service .
#   docker run -p 8080:8080 -e PAYMENTS_API_TOKEN_ID=dev-token \
#     -e PAYMENTS_API_CLIENT_SECRET=dev-secret -v payments-data:/data payments-service

# --- build: dependencies (better-sqlite3 compiled here), the server bundle ----------------
FROM node:20-bookworm-slim AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# better-sqlite3 from source against the image's own Node headers (/usr/local/include/node):
# no download of a prebuilt binary or of headers at build time.
ENV npm_config_build_from_source=true \
    npm_config_nodedir=/usr/local \
    npm_config_update_notifier=false \
    npm_config_fund=false \
    npm_config_audit=false
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts \
 && npm rebuild better-sqlite3 esbuild
COPY scripts/bundle.mjs scripts/bundle.mjs
COPY src/ src/
COPY bin/ bin/
# The bundle, then only what it loads at run time: the production dependencies, less the
# bundler and the TypeScript runner (used to build, never by the server) and the addon's
# C sources and object files.
RUN node scripts/bundle.mjs --force \
 && npm prune --omit=dev --ignore-scripts \
 && rm -rf node_modules/esbuild node_modules/@esbuild node_modules/tsx \
           node_modules/better-sqlite3/deps node_modules/better-sqlite3/src \
           node_modules/better-sqlite3/build/Release/obj.target \
           node_modules/better-sqlite3/build/Release/.deps \
           node_modules/better-sqlite3/build/deps \
 && node -e "require('better-sqlite3')(':memory:').prepare('select 1').get()"

# --- runtime: Node, the bundle, its CommonJS dependencies; runs as node (1000) ------------
FROM node:20-bookworm-slim
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules/ node_modules/
COPY --from=build /app/dist/bundle/ dist/bundle/
COPY --from=build /app/bin/ bin/
RUN mkdir -p /data && chown node:node /data
# What `npm start` sets (package.json config.serverNodeOptions, serverMallocArenaMax), the
# SQLite file and its server secret (payments-secret.key, beside it) in /data, listening on
# every interface of the container. Webhook endpoints may be private addresses (the platform's
# receiver is another container or the host): set PAYMENTS_WEBHOOK_ALLOW_PRIVATE=false when
# the sandbox is reachable by others.
ENV NODE_OPTIONS="--max-semi-space-size=8 --max-old-space-size=512" \
    MALLOC_ARENA_MAX=2 \
    HOST=0.0.0.0 \
    PORT=8080 \
    DATABASE_URL=sqlite:/data/payments.sqlite \
    PAYMENTS_WEBHOOK_ALLOW_PRIVATE=true
USER node
VOLUME /data
EXPOSE 8080
# Liveness (GET /healthz); the image has no curl, Node's fetch does it.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# The payments-service command: `docker run … payments-service token list` runs the CLI on
# the same store; the default is the server. SIGTERM stops it gracefully (exit status 0).
ENTRYPOINT ["node", "/app/bin/payments-service.js"]
CMD ["serve"]
