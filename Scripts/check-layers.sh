#!/usr/bin/env bash
# The library's lowest layer stays what it is: Sources/APNsCore (notifications, builders, rules,
# JSON, the exact request) compiles on its own, with no C module and nothing from Sources/APNs
# (connectors, credentials, the libcurl transport).
#
# Both folders are one module, `APNs` (Package.swift says why: its documentation then holds every
# public symbol), so the compiler no longer stops a DSL file from reaching into the transport. This
# check does: it type-checks Sources/APNsCore alone, as the module it belongs to, and fails on any
# import beyond the Swift and Foundation ones.
set -euo pipefail
cd "$(dirname "$0")/.."
if grep -rnE '^\s*(@_exported |@testable |internal |public |package )?import ' Sources/APNsCore --include='*.swift' \
    | grep -vE 'import (Foundation|FoundationEssentials|Glibc|Musl|Darwin|Synchronization)$'; then
  echo "Sources/APNsCore imports a module other than Foundation and the C library (above)" >&2
  exit 1
fi
mapfile -t core < <(find Sources/APNsCore -name '*.swift' | sort)
swiftc -typecheck -parse-as-library -swift-version 6 -module-name APNs -package-name swift_apns "${core[@]}"
echo "Sources/APNsCore type-checks alone (${#core[@]} files): no C, no transport"
