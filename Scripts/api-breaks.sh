#!/usr/bin/env bash
# The public API is what `swift package diagnose-api-breaking-changes` sees in the library products
# (APNs, APNsTesting, APNsMockServer). This compares it with the last release, the commit that
# CHANGELOG.md names in its newest version heading ("## [0.1.0] - 2026-11-25 - commit 4716200"),
# and fails on any break that the [Unreleased] section does not list. A break is listed by quoting
# the tool's own line, for example
#
#     - `API breakage: func Device.init(token:) has been removed` — use `Device(hex:)`.
#
#   bash Scripts/api-breaks.sh                 # what CI runs (builds the baseline: about 3 minutes)
#   bash Scripts/api-breaks.sh --baseline-dir /tmp/apns-api    # keep the baseline's API between runs
set -euo pipefail
cd "$(dirname "$0")/.."
heading=$(grep -m1 -E '^## \[[0-9]+\.[0-9]+\.[0-9]+\]' CHANGELOG.md || true)
baseline=$(grep -oE 'commit [0-9a-f]{7,40}' <<<"$heading" | cut -d' ' -f2 || true)
if [[ -z "$baseline" ]]; then
  echo "CHANGELOG.md: the newest version heading names no commit (\"## [X.Y.Z] - date - commit <hash>\")" >&2
  exit 2
fi
if ! git cat-file -e "$baseline^{commit}" 2>/dev/null; then
  echo "CHANGELOG.md names commit $baseline as the last release, and this clone does not have it" >&2
  exit 2
fi
allowlist=$(mktemp)
trap 'rm -f "$allowlist"' EXIT
awk '/^## \[Unreleased\]/ { open = 1; next } /^## \[/ { open = 0 } open' CHANGELOG.md \
  | grep -oE 'API breakage: [^`]+' >"$allowlist" || true
echo "API against ${heading#\#\# } ($(wc -l <"$allowlist") break(s) listed under [Unreleased])"
swift package diagnose-api-breaking-changes "$baseline" --products APNs APNsTesting APNsMockServer \
  --breakage-allowlist-path "$allowlist" "$@"
