#!/usr/bin/env bash
# Installs the system libraries swift-apns links against, when they are missing:
# libcurl (OpenSSL flavour, for HTTP/2) and OpenSSL's libcrypto, plus pkg-config to find them;
# for CI, the curl command (the example service's smoke run) and script from bsdutils (the CLI's
# progress-bar test on a pseudo-terminal) and openssl (the inspection tests compare with it); and
# SQLite's headers for the gateway's embedded queue (Gateway/, GRDB); and the proxies the proxy
# tests start on 127.0.0.1 (tinyproxy for HTTP CONNECT, stunnel in front of it for an HTTPS proxy,
# microsocks for SOCKS5). With --benchmarks, also nginx and its echo module: the benchmark's
# delayed server that answers a thousand streams on time (APNsBenchmark --far-server nginx).
# Safe to run again; does nothing when everything is present.
set -euo pipefail
packages=(libcurl4-openssl-dev libssl-dev pkg-config curl bsdutils openssl libsqlite3-dev tinyproxy-bin stunnel4 microsocks)
[ "${1:-}" = "--benchmarks" ] && packages+=(nginx-light libnginx-mod-http-echo)
missing=()
for package in "${packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "Installing ${missing[*]} …" >&2
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq "${missing[@]}" >/dev/null
# Debian starts the nginx service (port 80) when it installs it; the benchmark starts its own.
if [[ " ${missing[*]} " == *" nginx-light "* ]]; then
  $sudo service nginx stop >/dev/null 2>&1 || true
fi
