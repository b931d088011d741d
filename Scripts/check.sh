#!/usr/bin/env bash
# What a contributor runs before every commit (a few minutes once the build folder is warm): the
# build with no warnings in this repository's code, the library's parallel tier (every suite that
# needs no wall clock), and the lints CI runs. It proves most changes; CONTRIBUTING.md says what
# else proves a change to the transport, to timing, to a parser or to the gateway, and what CI
# adds.
#
#   bash Scripts/check.sh            # all of it
#   bash Scripts/check.sh --serial   # and the serial tier (timing through libcurl) too
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
bash Scripts/build.sh
if [ "${1:-}" = "--serial" ]; then
  bash Scripts/library-tests.sh --skip-build
else
  bash Scripts/library-tests.sh --skip-build --tier parallel
fi
python3 Scripts/check-platform-guards.py
bash Scripts/check-layers.sh
python3 Scripts/check-citations.py
bash Scripts/format.sh --lint
echo "check.sh: passed in $((SECONDS - start)) s"
