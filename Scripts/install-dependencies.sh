#!/usr/bin/env bash
# Installs, with apt, the Debian or Ubuntu packages that are missing, and says which before it does:
#
#   bash Scripts/install-dependencies.sh               # what the library links: libcurl (OpenSSL
#                                                      # flavour, for HTTP/2), libcrypto, pkg-config
#   bash Scripts/install-dependencies.sh --tests       # and what the test suites use (below)
#   bash Scripts/install-dependencies.sh --benchmarks  # and the benchmark's nginx
#   bash Scripts/install-dependencies.sh --browser     # and headless Chromium with its driver
#
# --tests adds: curl (the example service's smoke run), script from bsdutils (the CLI's progress
# bar on a pseudo-terminal), openssl (the inspection tests compare with it), SQLite's headers (the
# gateway's embedded queue, GRDB) and three proxies the proxy tests start on 127.0.0.1 and stop
# again (tinyproxy-bin for HTTP CONNECT, stunnel4 in front of it for an HTTPS proxy, microsocks for
# SOCKS5), and python3-venv (Gateway/webhooks-e2e.sh verifies with a PyPI library in a virtual
# environment of its own), nginx-light (the gateway's TLS recipe, Gateway/deploy/nginx.conf, run
# by Gateway/run-with-mock.sh --tls). None of them runs as a service once installed. The gateway's
# PostgreSQL tests install Debian's postgresql themselves (Scripts/start-postgres.sh, which says so).
# --benchmarks adds nginx-light and its echo module: the benchmark's delayed server
# (APNsBenchmark --far-server nginx). Debian starts nginx on port 80 when it installs it; this
# script stops that service again (the benchmark starts its own).
#
# --browser adds Debian's chromium and chromium-driver: the console's browser test
# (Scripts/console-browser-test.sh).
#
# Safe to run again: it installs nothing when everything is present, and removes nothing.
set -euo pipefail
packages=(libcurl4-openssl-dev libssl-dev pkg-config)
for option in "$@"; do
  case "$option" in
    --tests) packages+=(curl bsdutils openssl libsqlite3-dev tinyproxy-bin stunnel4 microsocks python3-venv nginx-light) ;;
    --benchmarks) packages+=(nginx-light libnginx-mod-http-echo) ;;
    --browser) packages+=(chromium chromium-driver curl python3-venv) ;;
    *) echo "unknown option: $option (--tests, --benchmarks, --browser)" >&2; exit 2 ;;
  esac
done
missing=()
for package in "${packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "Installing with apt: ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq "${missing[@]}" >/dev/null
if [[ " ${missing[*]} " == *" nginx-light "* ]]; then
  $sudo service nginx stop >/dev/null 2>&1 || true
fi
