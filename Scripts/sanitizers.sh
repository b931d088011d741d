#!/usr/bin/env bash
# The transport and bulk suites under ThreadSanitizer and AddressSanitizer. Everything runs about
# ten times slower there — a "slow machine" — and the tests scale their deadlines to match
# (Tests/TestFixtures/Fixture.swift, sanitizerSlowdown).
#
# Each run compiles this package's own modules with the sanitizer in the ordinary build folder
# (APNS_SANITIZER, see the end of Package.swift) and reuses every dependency the plain build
# compiled; the next plain build compiles this package's modules again, the dependencies not.
#
#   bash Scripts/sanitizers.sh            # thread and address
#   bash Scripts/sanitizers.sh thread     # one of them
set -euo pipefail
cd "$(dirname "$0")/.."
export LSAN_OPTIONS="suppressions=$PWD/Scripts/lsan-suppressions.txt:print_suppressions=0"
export TSAN_OPTIONS="suppressions=$PWD/Scripts/tsan-suppressions.txt"
suites="KeepWarmTests|TaskExecutorTests|ObservabilityTests|CertificateDetailsTests|GoAwayTests|BulkSendTests|FaultMatrixTests|LifecycleTests|TransportTests|CircuitBreakerTests|RetryTests|ServerBehaviourTests|UnrelatedKeyTests"
for sanitizer in "${@:-thread address}"; do
  for one in $sanitizer; do
    echo "== $one sanitizer: $suites"
    log=$(mktemp)
    case "$one" in
      thread | address) ;;
      *) echo "unknown sanitizer: $one (thread, address)" >&2; exit 2 ;;
    esac
    start=$SECONDS
    APNS_SANITIZER=$one swift build --build-tests 2>&1 | tail -1
    echo "$one sanitizer build: $((SECONDS - start)) s"
    status=0
    APNS_SANITIZER=$one swift test --skip-build --no-parallel --filter "$suites" >"$log" 2>&1 || status=$?
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
