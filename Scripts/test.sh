#!/usr/bin/env bash
# The README's test command.
#   bash Scripts/test.sh          the library's suites (Scripts/library-tests.sh: those that need no
#                                 wall clock side by side, then the few that measure real time one
#                                 at a time);
#   bash Scripts/test.sh --all    and then the push gateway's (Gateway/, its own package:
#                                 Hummingbird, GRDB/SQLite, postgres-nio), every store test on both
#                                 backends, and the Vapor integration's (VaporIntegration/, its own
#                                 package: its routes against the library's mock APNs, its
#                                 compile-time snippets), both built in the repository's .build
#                                 beside the library (Scripts/package.sh). CI runs this through .ci/run;
#   bash Scripts/test.sh --packages   the gateway's and the Vapor integration's alone.
#
# What it does to the machine, and undoes:
# - installs, with apt, the packages the tests use when they are missing, and names them
#   (Scripts/install-dependencies.sh --tests; with --all, Scripts/start-postgres.sh adds postgresql);
# - with --all, runs a throwaway PostgreSQL cluster on 127.0.0.1:55432 for the gateway's tests, and
#   on exit, pass or fail, removes it if it created it, stops it if it started it, and leaves it
#   running if it was already (Scripts/start-postgres.sh);
# - every server a test starts (the mock APNs, proxies, the gateway) is on 127.0.0.1 and ends with
#   its test;
# - a test run still going after 25 minutes is ended, with every thread's stack printed
#   (Scripts/watchdog.sh).
# It uninstalls no package and removes nothing it did not make.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  "" | --all | --packages) ;;
  *) echo "usage: bash Scripts/test.sh [--all | --packages]" >&2; exit 2 ;;
esac
bash Scripts/install-dependencies.sh --tests
[ "${1:-}" = --packages ] || bash Scripts/library-tests.sh
[ -n "${1:-}" ] || exit 0
state=$(mktemp)
trap 'bash Scripts/start-postgres.sh --stop-as "$state"; rm -f "$state"' EXIT
url=$(APNS_GATEWAY_PG_STATE=$state bash Scripts/start-postgres.sh)
# The gateway's suites in two tiers too: the ones whose senders race real heartbeats against 1–2 s
# send deadlines and short leases (LeaseTests: two senders on one queue, a sender that cannot
# renew) and the crash of a real gateway process (CrashSafetyTests) one at a time after the rest;
# side by side on two cores they made one another's sends time out. Every other suite takes its
# time from a clock it gives the dispatcher and the API (ManualGatewayClock), or none.
gateway_serial="\\.(LeaseTests|CrashSafetyTests)\\b"
export APNS_GATEWAY_POSTGRES_URL=$url
# Each run under Scripts/watchdog.sh: a test that hangs ends its run with every thread's stack.
bash Scripts/package.sh Gateway build --build-tests
bash Scripts/watchdog.sh bash Scripts/package.sh Gateway test --skip-build --skip "$gateway_serial"
bash Scripts/watchdog.sh bash Scripts/package.sh Gateway test --skip-build --no-parallel --filter "$gateway_serial"
bash Scripts/package.sh VaporIntegration build --build-tests
bash Scripts/watchdog.sh bash Scripts/package.sh VaporIntegration test --skip-build
