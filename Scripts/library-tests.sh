#!/usr/bin/env bash
# The library's suites in two tiers, from one build:
#   parallel  every suite that needs no wall clock, side by side (Swift Testing's default): values,
#             rules, exact bytes, compile-time snippets, the mock server's answers, outcomes that do
#             not depend on how long anything takes;
#   serial    the tests that measure real time through libcurl and the mock server (a deadline,
#             a grace period, an idle period, a stall, as they pass), one at a time, so that
#             nothing of this package's own competes with them for the two cores. Each holds beside
#             six CPU-bound processes (CONTRIBUTING.md). Whole suites, and in a suite that also
#             checks what takes no time, its nested suite named RealTime. By suite, the promise
#             each checks:
#               FaultMatrixTests      every fault ends each send once, truthfully, within its deadline
#               DeadlineTests         a send ends by its deadline, wherever it waits
#               ServiceLifecycleTests SIGTERM drains in-flight sends within the grace period
#               TransportTimingTests  a lone request is not held back by write coalescing; an
#                                     idle loop sleeps
#               IdleConnectionTests   no send is written to a connection idle too long to trust
#               ServerBehaviourTests  slow and stalled servers are judged at the right time
#               CLITimingTests        the `apns` command's timeout against a mock that stops answering
#               */RealTime            keep-warm's idle replacement, an idle connection with no PING,
#                                     memory trimmed per interval, deadlines counted from the send
#                                     and on the task executor, the grace period, a bulk send
#                                     through GOAWAY and a pool's spread as libcurl paces them
#   The rest run in the parallel tier, processes too: a test that runs `apns` waits for it off
#   Swift's concurrency threads (Tests/APNsCLITests/ChildProcess.swift).
#   Their decisions (the breaker, keep-warm's schedule, stall judgement) are tested as values too,
#   given the time, in the parallel tier (CircuitBreakerStateTests, KeepWarmScheduleTests, CycleWatchTests,
#   StallJudgementTests), and a transfer's life step by step (TransferLifeTests). Retries wait on
#   the connector's wait clock, which RetryTests gives and advances itself: it is in the parallel
#   tier. The breaker's
#   suite through libcurl (CircuitBreakerTests) is in the parallel tier: its cool-downs are either
#   longer than any run or shorter than starting a server, so it waits for no clock.
#
#   bash Scripts/library-tests.sh                      # both tiers (builds first)
#   bash Scripts/library-tests.sh --skip-build --skip "CompileTimeTests|APNsCoreTests"
#   bash Scripts/library-tests.sh --tier parallel      # one tier
#   bash Scripts/library-tests.sh --rerun-failed       # a serial suite that fails runs once more
#   bash Scripts/library-tests.sh --direct             # the built test binary, without SwiftPM
# Other arguments go to both `swift test` runs.
#
# --direct runs the test binary the last build made instead of `swift test`, which holds the build
# folder's lock for the whole run: so two runs (against two libcurls, .ci/run's slow tier) can go
# side by side. It builds nothing.
#
# --rerun-failed is for CI's runs against the other libcurls (.ci/run's slow tier), after the
# system's libcurl has passed every suite: there a serial suite that fails is run once more, alone,
# and the tier passes only if it passes then. Both runs are printed, and a suite that needed the
# second is named on a line of its own ("passed only when run again"), so that a promise kept only
# some of the time stays visible. Ubuntu 22.04's libcurl 7.81 recovers from the fault matrix's
# faults more slowly than 7.88 and, on a machine busy with other work, past some of its deadlines.
set -euo pipefail
cd "$(dirname "$0")/.."
serial="FaultMatrixTests|DeadlineTests|ServiceLifecycleTests|TransportTimingTests|IdleConnectionTests"
serial+="|ServerBehaviourTests|CLITimingTests"
# Test ids read "Module.Suite/test()", and "Module.Suite/RealTime/test()" in a nested suite.
pattern="\\.($serial)\\b|/RealTime/"
tiers="parallel serial"
args=()
skip=""
rerun=0
direct=
while [ $# -gt 0 ]; do
  case "$1" in
    --tier) tiers=$2; shift 2 ;;
    --skip) skip=$2; shift 2 ;;
    --rerun-failed) rerun=1; shift ;;
    --direct) direct=$(swift build --show-bin-path)/swift-apnsPackageTests.xctest; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
# The tests, through SwiftPM or (--direct) straight from the binary, which takes Swift Testing's
# own options (--filter, --skip, --no-parallel) as `swift test` passes them on.
# Each under Scripts/watchdog.sh: a test that hangs ends its run with every thread's stack.
run_tests() {
  if [ -n "$direct" ]; then
    bash Scripts/watchdog.sh "$direct" --testing-library swift-testing "$@"
  else
    bash Scripts/watchdog.sh swift test "$@"
  fi
}
for tier in $tiers; do
  start=$SECONDS
  case "$tier" in
    parallel)
      run_tests "${args[@]}" --skip "$pattern${skip:+|$skip}" ;;
    serial)
      log=$(mktemp)
      status=0
      run_tests "${args[@]}" --no-parallel --filter "$pattern" ${skip:+--skip "$skip"} 2>&1 | tee "$log" || status=$?
      # "✘ Suite FaultMatrixTests failed after 39.742 seconds with 2 issues."
      # (A nested suite is named alone: "✘ Suite RealTime failed": then every RealTime runs again.)
      failed=$(grep -oE "✘ Suite [A-Za-z0-9_]+ failed" "$log" | awk '{ print $3 }' | sort -u | paste -sd '|' || true)
      rm -f "$log"
      if [ "$status" -ne 0 ] && [ "$rerun" = 1 ] && [ -n "$failed" ]; then
        echo "library-tests.sh: running $failed once more, alone (--rerun-failed)"
        status=0
        run_tests "${args[@]}" --no-parallel --filter "\\.($failed)\\b|/($failed)/" ${skip:+--skip "$skip"} || status=$?
        [ "$status" -eq 0 ] && echo "library-tests.sh: $failed passed only when run again"
      fi
      [ "$status" -eq 0 ] || exit "$status" ;;
    *) echo "unknown tier: $tier (parallel, serial)" >&2; exit 2 ;;
  esac
  echo "library suites, $tier tier: $((SECONDS - start)) s"
done
