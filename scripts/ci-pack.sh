#!/usr/bin/env bash
# CI: the package as a user installs it. `npm pack` makes the tarball; it is installed on a
# clean HOME and npm cache, globally into a temporary prefix (`npm install -g <tarball>`),
# and in a fresh project (`npm install <tarball>`, then `npx payments-service`), from the
# packed file only. The installed command serves (/healthz, an authenticated read) and stops
# on SIGTERM with status 0. A third project uses the testing entry as a platform's test suite
# would: `import { startSandbox } from 'payments-service/testing'` (start, GET /config, a
# webhook, stop), and a TypeScript file using it passes `tsc --noEmit` (node16 and bundler).
#
#   scripts/ci-pack.sh            (PACK_PORT, default 18081: the port the installed server uses)
set -euo pipefail
cd "$(dirname "$0")/.."

PORT=${PACK_PORT:-18081}
work=$(mktemp -d /tmp/payments-pack.XXXXXX)
server=
cleanup() {
  if [ -n "$server" ] && kill -0 "$server" 2>/dev/null; then kill -KILL "$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
say() { printf 'pack: %s\n' "$*" >&2; }
fail() { say "FAILED: $*"; exit 1; }

# The tarball, and what it holds: the command, the built bundle, the types' sources, the
# LICENSE; no tests, data, benchmarks or repository files.
npm pack --silent --pack-destination "$work" >/dev/null
tarball=$(ls "$work"/payments-service-*.tgz)
listing=$(tar -tzf "$tarball")
for f in package/package.json package/LICENSE package/README.md package/bin/payments-service.js \
         package/dist/bundle/main.js package/dist/bundle/index.js package/src/index.ts \
         package/dist/bundle/testing.js package/dist/bundle/testing.d.ts package/src/testing.ts; do
  grep -qx "$f" <<<"$listing" || fail "$f missing from the tarball"
done
if grep -E '^package/(test|data|bench|node_modules|docs|\.git|\.ci)(/|$)|\.sqlite|secret\.key' <<<"$listing"; then
  fail "the tarball holds files a user does not need (above)"
fi
say "tarball $(basename "$tarball"): $(du -k "$tarball" | cut -f1) kB, $(wc -l <<<"$listing") files"

# A clean machine as far as npm knows: no user config, an empty cache.
mkdir -p "$work/home"
export HOME="$work/home" npm_config_cache="$work/npm-cache" npm_config_userconfig="$work/home/.npmrc"
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
# better-sqlite3 installs a prebuilt addon from GitHub, or compiles one with node-gyp, which
# downloads Node's headers from nodejs.org. These machines reach neither: node-gyp uses the
# headers installed with Node instead (what this machine's own npm config says too).
node_prefix=$(dirname "$(dirname "$(readlink -f "$(command -v node)")")")
[ -f "$node_prefix/include/node/node.h" ] && export npm_config_nodedir="$node_prefix"
# The prebuilt addon a machine with GitHub would download, made from this checkout's own
# build of the same version, handed over by prebuild-install's documented offline option
# (local prebuilds): compiling SQLite again costs minutes of CI. A different version resolved
# from the registry misses the file and compiles; PACK_COMPILE_ADDON=1 always compiles.
addon=node_modules/better-sqlite3
if [ -z "${PACK_COMPILE_ADDON:-}" ] && [ -f "$addon/build/Release/better_sqlite3.node" ]; then
  name=$(node -p "const v=require('./$addon/package.json').version; \`better-sqlite3-v\${v}-node-v\${process.versions.modules}-\${process.platform}-\${process.arch}.tar.gz\`")
  mkdir -p "$work/prebuilds"
  tar -C "$addon" -czf "$work/prebuilds/$name" build/Release/better_sqlite3.node
  export npm_config_better_sqlite3_local_prebuilds="$work/prebuilds"
fi

t0=$(date +%s)
npm install -g --prefix "$work/global" "$tarball" --loglevel=error >/dev/null
say "npm install -g <tarball>: $(( $(date +%s) - t0 )) s"
bin="$work/global/bin/payments-service"
[ -x "$bin" ] || fail "npm install -g made no payments-service command"

# The installed command serves: in memory, fixed credentials, on PORT.
DATABASE_URL=sqlite::memory: HOST=127.0.0.1 PORT="$PORT" LOG_LEVEL=warn \
PAYMENTS_API_TOKEN_ID=pack-token PAYMENTS_API_CLIENT_SECRET=pack-secret \
  "$bin" serve 2>"$work/serve.err" &
server=$!
base="http://127.0.0.1:$PORT"
for _ in $(seq 1 100); do
  curl -fsS "$base/healthz" >/dev/null 2>&1 && break
  kill -0 "$server" 2>/dev/null || { cat "$work/serve.err" >&2; fail "payments-service serve exited"; }
  sleep 0.2
done
health=$(curl -fsS "$base/healthz") || { cat "$work/serve.err" >&2; fail "no /healthz answer"; }
[ "$health" = '{"status":"ok"}' ] || fail "/healthz answered $health"
code=$(curl -s -o /dev/null -w '%{http_code}' -u pack-token:pack-secret "$base/2025-10-13/config")
[ "$code" = 200 ] || fail "GET /config with the credentials answered $code"
grep -q 'Payments Service 2025-10-13 sandbox' "$work/serve.err" || fail "no start-up banner"
# It runs the bundle it ships: an installed package never rebuilds into its own folder.
! grep -q 'building the server bundle' "$work/serve.err" || fail "the installed command rebuilt its bundle"
kill -TERM "$server"
status=0; wait "$server" || status=$?
server=
[ "$status" = 0 ] || fail "payments-service serve exited with $status on SIGTERM"
say "payments-service serve (global install): /healthz ok, GET /config 200, SIGTERM exit 0"

# npx in a project that installed the tarball. Without install scripts: compiling the
# SQLite addon a second time (minutes on a busy machine) would prove nothing the global
# install above did not; `--help` does not open a store.
mkdir -p "$work/project"
(
  unset npm_config_better_sqlite3_local_prebuilds
  cd "$work/project"
  printf '{ "name": "platform-app", "private": true, "type": "module" }\n' >package.json
  npm install "$tarball" --ignore-scripts --loglevel=error >/dev/null
  out=$(npx --no-install payments-service --help 2>"$work/npx.err")
  ! grep -q 'building the server bundle' "$work/npx.err" || fail "npx payments-service rebuilt the bundle: $(cat "$work/npx.err")"
  grep -q '^Usage: payments-service' <<<"$out" || fail "npx payments-service --help printed: $out"
)
say "npx payments-service --help (project install): usage printed"

# The testing entry from a project that installed the tarball (install scripts on: the
# sandbox opens an in-memory SQLite store, so the addon must be there; the local prebuild
# above keeps that quick). Runs in this process, on a free port.
mkdir -p "$work/tests"
(
  cd "$work/tests"
  printf '{ "name": "platform-tests", "private": true, "type": "module" }\n' >package.json
  npm install "$tarball" --loglevel=error >/dev/null
  cat >sandbox-check.mjs <<'JS'
import { startSandbox } from 'payments-service/testing';
const sandbox = await startSandbox();
const res = await fetch(`${sandbox.baseUrl}/config`, { headers: { authorization: sandbox.credentials.authorization } });
if (res.status !== 200) throw new Error(`GET /config answered ${res.status}`);
const test = await sandbox.waitForWebhook('TEST', { timeoutMs: 10_000 });
const port = new URL(sandbox.baseUrl).port;
await sandbox.stop();
console.log(`ok ${port} ${test.type}`);
JS
  out=$(node sandbox-check.mjs 2>"$work/testing.err") || { cat "$work/testing.err" >&2; fail "the testing entry script failed"; }
  grep -q '^ok [0-9]* TEST$' <<<"$out" || fail "the testing entry script printed: $out"
)
say "payments-service/testing (project install): startSandbox, GET /config 200, a signed TEST webhook, stop"

# Its types, for a TypeScript consumer: tsc from this checkout (the project has no TypeScript
# of its own), Node's types from this checkout too, under both module resolutions a Node
# project uses.
tsc="$PWD/node_modules/.bin/tsc"
if [ -x "$tsc" ]; then
  (
    cd "$work/tests"
    cat >sandbox-check.ts <<'TS'
import { startSandbox, type Sandbox, type ReceivedWebhook } from 'payments-service/testing';
const sandbox: Sandbox = await startSandbox({ logLevel: 'silent' });
const hook: ReceivedWebhook = await sandbox.waitForWebhook('TEST', { timeoutMs: 5_000, where: (w) => w.type === 'TEST' });
const other = await sandbox.createPlatform('Other');
await other.fund('InternalAccount:x', 100);
await sandbox.advanceClock('1h');
const id: string = hook.id + other.credentials.authorization;
// @ts-expect-error the clock moves by seconds or a duration string, not a Date
await sandbox.advanceClock(new Date());
await sandbox.stop();
export { id };
TS
    for resolution in node16 bundler; do
      module=$([ "$resolution" = bundler ] && echo esnext || echo node16)
      printf '{ "compilerOptions": { "strict": true, "noEmit": true, "target": "ES2022", "module": "%s", "moduleResolution": "%s", "skipLibCheck": true, "typeRoots": ["%s"], "types": ["node"] }, "files": ["sandbox-check.ts"] }\n' \
        "$module" "$resolution" "$OLDPWD/node_modules/@types" >tsconfig.json
      "$tsc" -p tsconfig.json || fail "tsc --noEmit of a TypeScript consumer failed (moduleResolution $resolution)"
    done
  )
  say "payments-service/testing types: a .ts consumer passes tsc --noEmit (node16, bundler)"
fi
say "ok"
