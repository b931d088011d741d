#!/usr/bin/env bash
# The public API is what `swift package diagnose-api-breaking-changes` sees in the library products
# (APNs, APNsTesting, APNsMockServer). This compares it with the last release, the commit that
# CHANGELOG.md names in its newest version heading ("## [0.1.0] - 2026-11-25 - commit 4716200"),
# and fails on any break that the [Unreleased] section does not list. A break is listed by quoting
# the tool's own line, for example
#
#     - `API breakage: func Device.init(token:) has been removed` — use `Device(hex:)`.
#
# The release's API is read from Scripts/api-baseline/<commit>.tar.xz when that file was made by
# the toolchain in use (its swift-version.txt says which): building the release's whole package,
# SwiftNIO and BoringSSL included, only to read its API again was most of this check's time.
# Otherwise the tool builds the release in .build as before.
#
#   bash Scripts/api-breaks.sh                   # what CI runs
#   bash Scripts/api-breaks.sh --write-baseline  # after a release (or a toolchain update): build
#                                                # the release's API and store it for the check
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
full=$(git rev-parse "$baseline^{commit}")
stored="Scripts/api-baseline/$full.tar.xz"
toolchain=$(swift --version 2>/dev/null | head -1)
products=(--products APNs APNsTesting APNsMockServer)
if [[ "${1:-}" == "--write-baseline" ]]; then
  work=$(mktemp -d)
  trap 'rm -f "$allowlist"; rm -rf "$work"' EXIT
  # The tool writes <dir>/<commit>/<module>.json; any break it reports is beside the point here.
  swift package diagnose-api-breaking-changes "$baseline" "${products[@]}" --baseline-dir "$work" \
    --regenerate-baseline >/dev/null || true
  printf '%s\n' "$toolchain" >"$work/$full/swift-version.txt"
  mkdir -p Scripts/api-baseline
  tar -C "$work" -cJf "$stored" "$full"
  echo "stored the API of $baseline in $stored ($(du -h "$stored" | cut -f1))"
  exit 0
fi
baseline_dir=()
if [[ -f "$stored" ]]; then
  work=$(mktemp -d)
  trap 'rm -f "$allowlist"; rm -rf "$work"' EXIT
  tar -C "$work" -xJf "$stored"
  if [[ "$(cat "$work/$full/swift-version.txt")" == "$toolchain" ]]; then
    baseline_dir=(--baseline-dir "$work")
    echo "the release's API from $stored"
  else
    echo "$stored was made by $(cat "$work/$full/swift-version.txt"), not $toolchain: building the release"
  fi
fi
swift package diagnose-api-breaking-changes "$baseline" "${products[@]}" "${baseline_dir[@]}" \
  --breakage-allowlist-path "$allowlist" "$@"
