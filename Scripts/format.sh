#!/usr/bin/env bash
# swift-format over every Swift file of the repository's packages, with .swift-format (line length
# 120, as swift-nio and swift-log). The compile-time snippets are left as written: each is a
# misuse, checked for the diagnostic it gives.
#
#   bash Scripts/format.sh          # rewrite in place
#   bash Scripts/format.sh --lint   # fail on any difference (CI)
set -euo pipefail
cd "$(dirname "$0")/.."
paths=(Package.swift Sources Tests/APNsTests Tests/APNsCoreTests Tests/APNsCLITests Tests/APNsMockServerTests Tests/TestFixtures Tests/CompileTimeTests/CompileTimeTests.swift
    Benchmarks/APNsBenchmark Benchmarks/APNsSoak Examples/PushService/Package.swift Examples/PushService/Sources
    Gateway/Package.swift Gateway/Sources Gateway/Tests Fuzz/Harnesses
    VaporIntegration/Package.swift VaporIntegration/Sources VaporIntegration/Tests/APNsVaporTests/*Tests.swift
    VaporIntegration/Tests/APNsVaporTests/Fixture.swift)
# A path that is not there would be skipped without a word (the benchmarks went unformatted that way).
for path in "${paths[@]}"; do
  [[ -e "$path" ]] || { echo "format.sh: $path does not exist; update the list" >&2; exit 1; }
done
if [[ "${1:-}" == "--lint" ]]; then
  swift format lint --strict --recursive "${paths[@]}"
  echo "swift format: no difference"
else
  swift format format --in-place --recursive "${paths[@]}"
fi
