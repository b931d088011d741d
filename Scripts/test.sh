#!/usr/bin/env bash
# The whole test suite: the library's (one suite after another: the fault-matrix and deadline
# tests assert per-send timing, which thousands of CPU-busy tasks from other suites on two cores
# would distort), then the push gateway's (Gateway/, its own package: Hummingbird, GRDB/SQLite).
# CI runs this through .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash Scripts/install-dependencies.sh
swift test --no-parallel
swift test --package-path Gateway
