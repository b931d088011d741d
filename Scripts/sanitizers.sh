#!/usr/bin/env bash
# The transport and bulk suites under ThreadSanitizer and AddressSanitizer. Everything runs about
# ten times slower there — a "slow machine" — and the tests scale their deadlines to match
# (Tests/TestFixtures/Fixture.swift, sanitizerSlowdown).
#
# Each build compiles this package's own modules with the sanitizer in the ordinary build folder
# (APNS_SANITIZER, see the end of Package.swift) and reuses every dependency the plain build
# compiled; the next plain build compiles this package's modules again, the dependencies not.
#
# The suites mostly wait (on servers that answer late, deadlines, reconnections), so the two runs
# go side by side: each sanitizer's test binary is copied out of the build folder and run from
# there, and the second build and run overlap the first run.
#   thread   every suite below: the transport's thread, the connectors', the bulk send's tasks;
#   address  the suites that drive the code that handles memory itself (libcurl's handles and
#            buffers, header lists, request bodies, libcrypto's objects): the transport, the bulk
#            send, faults and GOAWAYs, server behaviour and certificates.
#
#   bash Scripts/sanitizers.sh            # thread and address
#   bash Scripts/sanitizers.sh thread     # one of them
set -euo pipefail
cd "$(dirname "$0")/.."
export LSAN_OPTIONS="suppressions=$PWD/Scripts/lsan-suppressions.txt:print_suppressions=0"
export TSAN_OPTIONS="suppressions=$PWD/Scripts/tsan-suppressions.txt"
thread_suites="KeepWarmTests|TaskExecutorTests|ObservabilityTests|CertificateDetailsTests|GoAwayTests|BulkSendTests"
thread_suites+="|FaultMatrixTests|LifecycleTests|TransportTests|TransportTimingTests|CircuitBreakerTests|RetryTests|ServerBehaviourTests"
thread_suites+="|UnrelatedKeyTests|ServiceLifecycleTests|LoopClockTests|PoolGrowthTests"
address_suites="TransportTests|TransportTimingTests|BulkSendTests|FaultMatrixTests|GoAwayTests|ServerBehaviourTests|CertificateDetailsTests"
address_suites+="|PoolGrowthTests"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
runs=()
for one in ${@:-thread address}; do
  case "$one" in
    thread) suites=$thread_suites ;;
    address) suites=$address_suites ;;
    *) echo "unknown sanitizer: $one (thread, address)" >&2; exit 2 ;;
  esac
  start=$SECONDS
  APNS_SANITIZER=$one swift build --build-tests 2>&1 | tail -1
  echo "$one sanitizer build: $((SECONDS - start)) s"
  cp "$(APNS_SANITIZER=$one swift build --show-bin-path)/swift-apnsPackageTests.xctest" "$work/$one.xctest"
  echo "== $one sanitizer: $suites (started at $((SECONDS)) s)"
  (
    status=0
    bash Scripts/watchdog.sh "$work/$one.xctest" --testing-library swift-testing --no-parallel --filter "\\.($suites)\\b" \
      >"$work/$one.log" 2>&1 || status=$?
    echo "$status" >"$work/$one.status"
  ) &
  runs+=("$one")
done
wait
failed=0
for one in "${runs[@]}"; do
  log=$work/$one.log
  status=$(cat "$work/$one.status")
  echo "== $one sanitizer"
  # A failed expectation's comment follows it on lines that start with "↳".
  grep -E -A3 "Test run with|✘" "$log" | grep -E "Test run with|✘|↳" | grep -v -E "↳ (Testing Library|Target Platform|///)" | head -30 || true
  reports=$(grep -c -E "WARNING: ThreadSanitizer: |ERROR: AddressSanitizer: |ERROR: LeakSanitizer: " "$log" || true)
  echo "$one sanitizer reports: $reports"
  if [ "$status" -ne 0 ] || [ "$reports" -ne 0 ]; then
    grep -A30 -E "ThreadSanitizer: |AddressSanitizer: |LeakSanitizer: " "$log" | head -80 || true
    failed=1
  fi
done
exit "$failed"
