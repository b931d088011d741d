#!/usr/bin/env bash
# Builds the DocC catalog Sources/APNs/APNs.docc into .build-docs/APNs.doccarchive and fails on any
# warning (an unresolved symbol link, an undocumented parameter, a broken article link).
#
# Why not `swift package generate-documentation`: swift-docc-plugin extracts symbol graphs with
# swift-symbolgraph-extract, which leaves out what `APNs` re-exports from `APNsCore` (the
# notifications, the request, the errors) and offers no way to pass the flag that would keep it
# (swiftlang/swift-docc-plugin#113). Symbol graphs emitted by the compiler during a build include
# re-exported symbols, so this script builds `APNs` with -emit-symbol-graph and runs docc on that.
# `swift package generate-documentation --target APNs` still works (the plugin is a dependency),
# with the APNsCore symbols missing.
#
# --coverage prints DocC's documentation coverage summary as well.
set -euo pipefail
cd "$(dirname "$0")/.."
graphs=.build-docs/symbol-graphs
# Kept between runs: an up-to-date build compiles nothing and so writes no new graph.
rm -rf .build-docs/apns-only && mkdir -p "$graphs" .build-docs/apns-only
swift build --scratch-path .build-docs --target APNs \
    -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$PWD/$graphs" >/dev/null
# APNs.symbols.json already holds APNsCore's symbols (re-exported); APNsCore's own graph would
# duplicate them.
cp "$graphs/APNs.symbols.json" .build-docs/apns-only/
extra=()
if [[ "${1:-}" == "--coverage" ]]; then extra=(--experimental-documentation-coverage --coverage-summary-level brief); fi
docc_bin=$(command -v docc || echo "$(dirname "$(command -v swift)")/docc")
"$docc_bin" convert Sources/APNs/APNs.docc \
    --additional-symbol-graph-dir .build-docs/apns-only \
    --fallback-display-name APNs --fallback-bundle-identifier org.swift-apns.APNs \
    --output-path .build-docs/APNs.doccarchive --warnings-as-errors "${extra[@]}"
echo "documentation: .build-docs/APNs.doccarchive"
