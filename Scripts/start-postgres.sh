#!/usr/bin/env bash
# Starts a throwaway PostgreSQL cluster for the push gateway's tests, on 127.0.0.1 only, with
# Debian's postgresql (installed when missing), and prints its URL:
#
#   export APNS_GATEWAY_POSTGRES_URL=$(bash Scripts/start-postgres.sh)
#
# The cluster is called apnsgateway, listens on port 55432 (APNS_GATEWAY_PG_PORT to change it) and
# trusts connections from this machine (tests only). Safe to run again: it reuses the cluster.
set -euo pipefail
port=${APNS_GATEWAY_PG_PORT:-55432}
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
if ! command -v pg_createcluster >/dev/null 2>&1; then
  echo "Installing postgresql …" >&2
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq >&2
  $sudo apt-get install -y -qq postgresql >/dev/null
fi
version=$(ls /usr/lib/postgresql | sort -V | tail -1)
if ! pg_lsclusters -h 2>/dev/null | awk '{print $1, $2}' | grep -qx "$version apnsgateway"; then
  $sudo pg_createcluster "$version" apnsgateway -p "$port" -- -A trust >/dev/null
  echo "listen_addresses = '127.0.0.1'" | $sudo tee -a "/etc/postgresql/$version/apnsgateway/postgresql.conf" >/dev/null
  echo "max_connections = 200" | $sudo tee -a "/etc/postgresql/$version/apnsgateway/postgresql.conf" >/dev/null
fi
if ! pg_lsclusters -h | awk -v v="$version" '$1 == v && $2 == "apnsgateway" {print $4}' | grep -q online; then
  $sudo pg_ctlcluster "$version" apnsgateway start >&2
fi
for _ in $(seq 100); do pg_isready -q -h 127.0.0.1 -p "$port" && break; sleep 0.1; done
pg_isready -q -h 127.0.0.1 -p "$port" || { echo "PostgreSQL did not start on 127.0.0.1:$port" >&2; exit 1; }
echo "postgres://postgres@127.0.0.1:$port/postgres"
