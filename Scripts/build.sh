#!/usr/bin/env bash
# Builds the package and its tests, and fails on any compiler warning in this repository's own
# code. The effect of -warnings-as-errors without changing a module's flags: -Xswiftc reaches
# every dependency too, so a build with it shares nothing with one without, and every later
# stage would build SwiftNIO again. Dependencies' warnings are SwiftPM's to suppress. An
# incremental build shows the warnings of the files it compiles; a fresh clone's, all of them.
#
#   bash Scripts/build.sh                          # the library, its tools and tests
#   bash Scripts/build.sh --package-path Gateway   # another of the repository's packages
set -euo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
swift build --build-tests "$@" >"$log" 2>&1 || status=$?
grep -E "error:|Compiling|Build complete|Build of" "$log" | grep -v -E "^\[[0-9]+/[0-9]+\] Compiling" | tail -20 || true
# "<path in this repository>:<line>:<column>: warning: …", not the checkouts' or SwiftPM's own.
warnings=$(grep -E "^$PWD/[^:]+:[0-9]+:[0-9]+: warning: " "$log" | grep -v "/\.build[^/]*/" | sort -u || true)
if [ -n "$warnings" ]; then
  printf '%s\n' "$warnings"
  echo "build.sh: $(wc -l <<<"$warnings") compiler warning(s) in this repository's code: fix them" >&2
  exit 1
fi
exit "$status"
