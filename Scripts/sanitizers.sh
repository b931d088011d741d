#!/usr/bin/env bash
# The transport and bulk suites under ThreadSanitizer and AddressSanitizer, each in its own build
# folder. Everything runs about ten times slower there — a "slow machine" — and the tests scale
# their deadlines to match (Tests/TestFixtures/Fixture.swift, sanitizerSlowdown).
#
#   bash Scripts/sanitizers.sh            # thread and address
#   bash Scripts/sanitizers.sh thread     # one of them
set -euo pipefail
cd "$(dirname "$0")/.."
export LSAN_OPTIONS="suppressions=$PWD/Scripts/lsan-suppressions.txt:print_suppressions=0"
suites="KeepWarmTests|TaskExecutorTests|ObservabilityTests|CertificateDetailsTests|GoAwayTests|BulkSendTests|FaultMatrixTests|LifecycleTests|TransportTests|CircuitBreakerTests|RetryTests|ServerBehaviourTests"
for sanitizer in "${@:-thread address}"; do
  for one in $sanitizer; do
    echo "== swift test --sanitize=$one ($suites)"
    log=$(mktemp)
    swift build --build-tests --sanitize="$one" --scratch-path ".build-$one" 2>&1 | tail -1
    status=0
    swift test --skip-build --sanitize="$one" --scratch-path ".build-$one" --no-parallel --filter "$suites" >"$log" 2>&1 || status=$?
    # A failed expectation's comment follows it on lines that start with "↳".
    grep -E -A3 "Test run with|✘" "$log" | grep -E "Test run with|✘|↳" | grep -v -E "↳ (Testing Library|Target Platform|///)" | head -30 || true
    reports=$(grep -c -E "WARNING: ThreadSanitizer: |ERROR: AddressSanitizer: |ERROR: LeakSanitizer: " "$log" || true)
    echo "$one sanitizer reports: $reports"
    if [ "$status" -ne 0 ] || [ "$reports" -ne 0 ]; then
      grep -A30 -E "ThreadSanitizer: |AddressSanitizer: |LeakSanitizer: " "$log" | head -80 || true
      exit 1
    fi
  done
done
