#!/usr/bin/env bash
# The whole test suite: the library's (one suite after another: the fault-matrix and deadline
# tests assert per-send timing, which thousands of CPU-busy tasks from other suites on two cores
# would distort), then the push gateway's (Gateway/, its own package: Hummingbird, GRDB/SQLite,
# postgres-nio), every store test on both backends: a throwaway PostgreSQL cluster on 127.0.0.1 is
# started first (Scripts/start-postgres.sh); then the Vapor integration's (VaporIntegration/, its own
# package: its routes against the library's mock APNs, its compile-time snippets). CI runs this
# through .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash Scripts/install-dependencies.sh
swift test --no-parallel
APNS_GATEWAY_POSTGRES_URL=$(bash Scripts/start-postgres.sh) swift test --package-path Gateway
swift test --package-path VaporIntegration
