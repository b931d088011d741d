#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the push gateway's tests, on 127.0.0.1 only, with Debian's
# postgresql (installed when missing), and its URL on standard output:
#
#   export APNS_GATEWAY_POSTGRES_URL=$(bash Scripts/start-postgres.sh)
#   …
#   bash Scripts/start-postgres.sh --stop     # stop it again
#
# The cluster is called apnsgateway, listens on port 55432 (APNS_GATEWAY_PG_PORT to change it) and
# trusts connections from this machine (tests only). Safe to run again: it reuses the cluster.
#
# With APNS_GATEWAY_PG_STATE=FILE it writes to FILE what it had to do — `created` (the cluster did
# not exist), `started` (it existed, stopped) or `running` (nothing) — and
# `--stop-as FILE` undoes exactly that: drops a cluster it created, stops one it started, and
# leaves one that was already running alone. Scripts/test.sh uses the pair, so the test command
# leaves the machine's clusters as it found them.
#
# Installing postgresql makes Debian create and start its default cluster (`main`, port 5432);
# when this script installed the package it stops that cluster again and says so.
set -euo pipefail
port=${APNS_GATEWAY_PG_PORT:-55432}
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"

if [ "${1:-}" = "--stop" ] || [ "${1:-}" = "--stop-as" ]; then
  command -v pg_lsclusters >/dev/null 2>&1 || exit 0
  version=$(ls /usr/lib/postgresql | sort -V | tail -1)
  what=created-or-started
  [ "$1" = "--stop-as" ] && what=$(cat "${2:?--stop-as takes the state file}" 2>/dev/null || echo running)
  case "$what" in
    created) $sudo pg_dropcluster --stop "$version" apnsgateway && echo "PostgreSQL test cluster removed" >&2 ;;
    started | created-or-started) $sudo pg_ctlcluster "$version" apnsgateway stop 2>/dev/null \
      && echo "PostgreSQL test cluster stopped" >&2 || true ;;
    *) ;;
  esac
  exit 0
fi

state=running
if ! command -v pg_createcluster >/dev/null 2>&1; then
  echo "Installing postgresql with apt (for the gateway's PostgreSQL tests) …" >&2
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq >&2
  $sudo apt-get install -y -qq postgresql >/dev/null
  for cluster in $(pg_lsclusters -h | awk '$4 == "online" {print $1 "/" $2}'); do
    $sudo pg_ctlcluster "${cluster%/*}" "${cluster#*/}" stop
    echo "stopped the cluster Debian started when it installed postgresql ($cluster)" >&2
  done
fi
version=$(ls /usr/lib/postgresql | sort -V | tail -1)
if ! pg_lsclusters -h 2>/dev/null | awk '{print $1, $2}' | grep -qx "$version apnsgateway"; then
  $sudo pg_createcluster "$version" apnsgateway -p "$port" -- -A trust >/dev/null
  echo "listen_addresses = '127.0.0.1'" | $sudo tee -a "/etc/postgresql/$version/apnsgateway/postgresql.conf" >/dev/null
  echo "max_connections = 200" | $sudo tee -a "/etc/postgresql/$version/apnsgateway/postgresql.conf" >/dev/null
  state=created
fi
if ! pg_lsclusters -h | awk -v v="$version" '$1 == v && $2 == "apnsgateway" {print $4}' | grep -q online; then
  $sudo pg_ctlcluster "$version" apnsgateway start >&2
  [ "$state" = created ] || state=started
fi
[ -n "${APNS_GATEWAY_PG_STATE:-}" ] && echo "$state" > "$APNS_GATEWAY_PG_STATE"
for _ in $(seq 100); do pg_isready -q -h 127.0.0.1 -p "$port" && break; sleep 0.1; done
pg_isready -q -h 127.0.0.1 -p "$port" || { echo "PostgreSQL did not start on 127.0.0.1:$port" >&2; exit 1; }
echo "postgres://postgres@127.0.0.1:$port/postgres"
