#!/usr/bin/env bash
# CI: build the container image from the unmodified Dockerfile and use it as a user would,
# from outside the container, on SQLite and on PostgreSQL.
#
# These machines reach Debian's packages and the npm registry but no image registry, so the
# base image node:20-bookworm-slim is a stand-in made here from Debian's packages (debootstrap
# minbase bookworm) plus this machine's Node 20, its CA certificates and the user node (1000),
# as the official image has them. It is made once per machine and reused (`podman image
# exists`); the Dockerfile is built with --pull=never, so it is the official one's layout that
# the build relies on, nothing more.
#
#   scripts/ci-container.sh                 base (if missing), build, run on SQLite and PostgreSQL
#   CONTAINER_PORT=9700 scripts/ci-container.sh
#
# Environment: CONTAINER_PORT (default 18080), IMAGE (default payments-service:ci),
# PGHOST/PGPORT (default 127.0.0.1:5432, user postgres, CREATEDB right).
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=${IMAGE:-payments-service:ci}
BASE=node:20-bookworm-slim
PORT=${CONTAINER_PORT:-18080}
PGHOST=${PGHOST:-127.0.0.1}
PGPORT=${PGPORT:-5432}
NAME="payments-ci-$$"
started_all=$(date +%s.%N)

say() { printf 'container: %s\n' "$*" >&2; }
# podman here has no systemd to run healthcheck timers: it says so on every run and stop
# (harmless; the script runs the HEALTHCHECK itself).
podman() { command podman "$@" 2> >(grep -v 'unable to get systemd connection' >&2); }
seconds_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

# --- tools -------------------------------------------------------------------------------
need=()
for tool in podman debootstrap runc; do command -v "$tool" >/dev/null 2>&1 || need+=("$tool"); done
if [ "${#need[@]}" -gt 0 ]; then
  say "installing ${need[*]} from Debian's packages"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman debootstrap runc uidmap >/dev/null
fi
# What podman needs on these machines: runc (crun is not usable here) and explicit ulimits
dropin=/etc/containers/containers.conf.d/50-payments-ci.conf
# (podman's defaults, and even the machine's own hard limit of processes, are refused here;
# 4096 processes are plenty for one server).
nofile=$(ulimit -Hn); [ "$nofile" = unlimited ] || [ "$nofile" -gt 65536 ] && nofile=65536
limits="\"nofile=$nofile:$nofile\", \"nproc=4096:4096\""
if [ ! -f "$dropin" ] || ! grep -qF "$limits" "$dropin"; then
  mkdir -p "$(dirname "$dropin")"
  cat >"$dropin" <<CONF
[containers]
default_ulimits = [$limits]

[engine]
runtime = "runc"
CONF
fi

# --- the stand-in base image -------------------------------------------------------------
if podman image exists "$BASE"; then
  say "base $BASE present (made earlier on this machine)"
else
  t0=$(date +%s.%N)
  say "making the stand-in base $BASE (debootstrap minbase bookworm + this machine's Node 20)"
  rootfs=$(mktemp -d /tmp/payments-base.XXXXXX)
  trap 'rm -rf "$rootfs"' EXIT
  mirror=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  debootstrap --variant=minbase bookworm "$rootfs" "${mirror:-http://deb.debian.org/debian}" >/dev/null
  # Node where the official image has it: /usr/local (node, npm, npx, corepack-less), with the
  # headers node-gyp builds native addons against.
  node_bin=$(readlink -f "$(command -v node)")
  prefix=$(dirname "$(dirname "$node_bin")")
  mkdir -p "$rootfs/usr/local/bin" "$rootfs/usr/local/lib/node_modules" "$rootfs/usr/local/include"
  cp "$node_bin" "$rootfs/usr/local/bin/node"
  cp -a "$prefix/lib/node_modules/npm" "$rootfs/usr/local/lib/node_modules/npm"
  ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
  ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
  cp -a "$prefix/include/node" "$rootfs/usr/local/include/node"
  # This machine's CA certificates (its egress may present its own CA), trusted by Node.
  mkdir -p "$rootfs/etc/ssl/certs"
  cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
  chroot "$rootfs" groupadd --gid 1000 node
  chroot "$rootfs" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/archives/*.deb
  tar -C "$rootfs" -c . | podman import --quiet \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change "ENV NODE_VERSION=$(node -p 'process.versions.node')" \
    --change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
    --change 'CMD ["node"]' - "$BASE" >/dev/null
  rm -rf "$rootfs"
  trap - EXIT
  say "base made in $(seconds_since "$t0") s"
fi

# --- the image, from the unmodified Dockerfile -------------------------------------------
t0=$(date +%s.%N)
# --format docker keeps HEALTHCHECK (the OCI format has no such field). Layers are cached:
# an unchanged package-lock.json reuses the dependency layer (the addon's compilation).
podman build --pull=never --format docker -t "$IMAGE" . >/tmp/payments-ci-build.log 2>&1 \
  || { tail -n 40 /tmp/payments-ci-build.log >&2; say "FAILED: podman build"; exit 1; }
build_s=$(seconds_since "$t0")
# Each build with changed sources leaves its previous layers behind: drop those older than a
# week (the recent ones are the cache of the next build).
podman image prune -f --filter until=168h >/dev/null
size_bytes=$(podman image inspect "$IMAGE" --format '{{.Size}}')
base_bytes=$(podman image inspect "$BASE" --format '{{.Size}}')
say "image $IMAGE built in $build_s s: $((size_bytes / 1000000)) MB, of which $(((size_bytes - base_bytes) / 1000000)) MB over the base"

# --- run it as a user would: from outside, on SQLite then PostgreSQL ---------------------
container=
volume=
db=
cleanup() {
  [ -n "$container" ] && podman rm -f -v "$container" >/dev/null 2>&1 || true
  [ -n "$volume" ] && podman volume rm -f "$volume" >/dev/null 2>&1 || true
  [ -n "$db" ] && psql -h "$PGHOST" -p "$PGPORT" -U postgres -qc "drop database if exists \"$db\"" >/dev/null 2>&1 || true
}
trap cleanup EXIT
fail() { say "FAILED: $*"; [ -n "$container" ] && podman logs "$container" 2>&1 | tail -n 30 >&2; exit 1; }
json() { node -e "let s='';process.stdin.on('data',c=>s+=c).on('end',()=>{const o=JSON.parse(s);console.log($1)})"; }

AUTH=ci-token:ci-secret-for-the-container-run
BASEURL="http://127.0.0.1:$PORT"
API="$BASEURL/2025-10-13"

# start <name> <podman run options…>: runs the image detached and waits for /healthz.
start() {
  container=$1; shift
  local t
  t=$(date +%s.%N)
  podman run -d --name "$container" --health-interval=disable \
    -e PAYMENTS_API_TOKEN_ID="${AUTH%%:*}" -e PAYMENTS_API_CLIENT_SECRET="${AUTH#*:}" -e LOG_LEVEL=warn \
    "$@" "$IMAGE" >/dev/null || fail "podman run"
  for _ in $(seq 1 300); do
    curl -fsS "$BASEURL/healthz" >/dev/null 2>&1 && break
    [ "$(podman inspect "$container" --format '{{.State.Running}}')" = true ] || fail "the container exited"
    sleep 0.1
  done
  curl -fsS "$BASEURL/healthz" >/dev/null || fail "no /healthz answer"
  startup_s=$(seconds_since "$t")
  # The image's HEALTHCHECK, run by hand (no systemd timers here).
  podman healthcheck run "$container" >/dev/null || fail "the image's HEALTHCHECK failed"
}

# stop: SIGTERM (podman stop), the server stops gracefully: exit status 0.
stop() {
  podman stop -t 10 "$container" >/dev/null
  local code
  code=$(podman inspect "$container" --format '{{.State.ExitCode}}')
  [ "$code" = 0 ] || fail "exit status $code after SIGTERM"
  podman rm -v "$container" >/dev/null
  container=
}

call() { # call <method> <path> [json body]: prints the body, fails on a status other than 2xx
  local out code body=()
  out=$(mktemp)
  [ $# -ge 3 ] && body=(-H 'content-type: application/json' -d "$3")
  code=$(curl -s -o "$out" -w '%{http_code}' -u "$AUTH" -X "$1" "$API$2" "${body[@]}")
  cat "$out"; rm -f "$out"
  case "$code" in 2??) ;; *) fail "$1 $2 answered $code" ;; esac
}

# A customer, a quote executed at once from the funded platform account, read back, and
# settled by the sandbox clock.
journey() {
  local customer usd payee quote tx
  customer=$(call POST /customers '{"customerType":"INDIVIDUAL","fullName":"Ada Sender","currencies":["USD"]}' | json o.id)
  [ "$(call GET "/customers/$customer" | json o.fullName)" = "Ada Sender" ] || fail "customer read back"
  usd=$(call GET '/platform/internal-accounts?currency=USD' | json o.data[0].id)
  [ "$(call POST "/sandbox/internal-accounts/$usd/fund" '{"amount":50000}' | json o.balance.amount)" = 50000 ] || fail "funding"
  payee=$(call POST /platform/external-accounts '{"currency":"USD","accountInfo":{"accountType":"USD_ACCOUNT","accountNumber":"123456789","routingNumber":"021000021","bankName":"Sandbox Bank","beneficiary":{"beneficiaryType":"INDIVIDUAL","fullName":"Rosa Receiver","countryOfResidence":"US"}}}' | json o.id)
  quote=$(call POST /quotes "{\"source\":{\"sourceType\":\"ACCOUNT\",\"accountId\":\"$usd\"},\"destination\":{\"destinationType\":\"ACCOUNT\",\"accountId\":\"$payee\"},\"lockedCurrencySide\":\"SENDING\",\"lockedCurrencyAmount\":12000,\"immediatelyExecute\":true}")
  tx=$(json o.transactionId <<<"$quote")
  [ "$(call GET "/quotes/$(json o.id <<<"$quote")" | json o.transactionId)" = "$tx" ] || fail "quote read back"
  call POST /sandbox/clock/advance '{"seconds":1}' >/dev/null
  [ "$(call GET "/transactions/$tx" | json o.status)" = COMPLETED ] || fail "the payment did not complete"
  [ "$(call GET "/platform/internal-accounts?currency=USD" | json o.data[0].balance.amount)" = 38000 ] || fail "balance after the payment"
  last_customer=$customer
}

# SQLite in the volume /data: the journey, a graceful stop, and the data still there when
# another container starts on the same volume.
volume="payments-ci-data-$$"
podman volume create "$volume" >/dev/null
start "$NAME-sqlite" -p "127.0.0.1:$PORT:8080" -v "$volume:/data"
sqlite_startup=$startup_s
journey
podman exec "$container" test -s /data/payments-secret.key || fail "no server secret in /data"
stop
start "$NAME-sqlite2" -p "127.0.0.1:$PORT:8080" -v "$volume:/data"
[ "$(call GET "/customers/$last_customer" | json o.fullName)" = "Ada Sender" ] || fail "the volume lost the customer"
stop
# The entry point is the command line too, on the same store.
[ "$(podman run --rm -v "$volume:/data" "$IMAGE" platform list | json o.length)" = 1 ] || fail "payments-service platform list in the image"
say "SQLite (volume /data): healthy in $sqlite_startup s, journey ok, SIGTERM exit 0, data kept across containers, CLI on the volume"

# PostgreSQL on the host, a fresh database, the host's network.
db="payments_ci_$$"
psql -h "$PGHOST" -p "$PGPORT" -U postgres -qc "create database \"$db\"" >/dev/null
start "$NAME-pg" --network host -e PORT="$PORT" -e DATABASE_URL="postgres://postgres@$PGHOST:$PGPORT/$db"
pg_startup=$startup_s
journey
stop
say "PostgreSQL (--network host): healthy in $pg_startup s, journey ok, SIGTERM exit 0"
say "ok in $(seconds_since "$started_all") s (image $((size_bytes / 1000000)) MB; build $build_s s; start-up to /healthz $sqlite_startup s SQLite, $pg_startup s PostgreSQL)"
