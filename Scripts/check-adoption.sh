#!/usr/bin/env bash
# A new user's first package, made from the documentation alone: the manifest in Testing.md (whose
# dependency line is Getting Started's), a source file, and Testing.md's unit and integration tests
# pasted as they stand, beside a copy of this working tree in a folder named swift-apns, as Getting
# Started says. It must build and its tests pass. Everything is made in a temporary folder and
# removed at the end.
#
#   bash Scripts/check-adoption.sh              # the unit and the integration test (about 10
#                                               # minutes on two cores: the mock brings SwiftNIO)
#   bash Scripts/check-adoption.sh --unit-only  # what CI runs: the manifest without its
#                                               # integration target (whose sample the library's
#                                               # DocumentationSampleTests typecheck), the unit tests
set -euo pipefail
unit_only=false
[ "${1:-}" = "--unit-only" ] && unit_only=true
cd "$(dirname "$0")/.."
root=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The n-th ```swift block of an article (counting from 0) that contains a word.
block() { # article word
  awk -v word="$2" '
    /^```swift$/ { inside = 1; text = ""; next }
    /^```$/ && inside { inside = 0; if (index(text, word) && !done) { printf "%s", text; done = 1 }; next }
    inside { text = text $0 "\n" }' "Sources/APNs.docc/$1"
}
nth_test() { # article n: the n-th block (from 0) that declares a @Test
  awk -v want="$2" '
    /^```swift$/ { inside = 1; text = ""; next }
    /^```$/ && inside { inside = 0; if (index(text, "@Test")) { if (seen++ == want) printf "%s", text }; next }
    inside { text = text $0 "\n" }' "Sources/APNs.docc/$1"
}

dependency='.package(path: "../swift-apns")'
for article in GettingStarted.md Testing.md; do
  block "$article" "swift-tools-version" | grep -qF "$dependency" \
    || { echo "$article: its manifest does not depend on $dependency" >&2; exit 1; }
done

mkdir -p "$work/swift-apns"
git ls-files -co --exclude-standard | while IFS= read -r file; do [ -e "$file" ] && printf '%s\n' "$file"; done \
  | tar -cf - -T - | tar -xf - -C "$work/swift-apns"
package="$work/MyServer"
mkdir -p "$package/Sources/MyServer" "$package/Tests/MyServerTests" "$package/Tests/MyServerIntegrationTests"
block Testing.md "swift-tools-version" >"$package/Package.swift"
printf 'import APNs\n\n// The service'"'"'s own code.\n' >"$package/Sources/MyServer/MyServer.swift"
nth_test Testing.md 0 >"$package/Tests/MyServerTests/ShippingNoticeTests.swift"
nth_test Testing.md 1 >"$package/Tests/MyServerIntegrationTests/MockAPNsTests.swift"
for file in "$package/Tests/MyServerTests/ShippingNoticeTests.swift" "$package/Tests/MyServerIntegrationTests/MockAPNsTests.swift"; do
  [ -s "$file" ] || { echo "Testing.md: a test sample is missing ($file)" >&2; exit 1; }
done
expected=3
if $unit_only; then
  python3 - "$package/Package.swift" <<'PY'
import re, sys
path = sys.argv[1]
text = open(path).read()
trimmed = re.sub(r'\s*\.testTarget\(\s*name: "MyServerIntegrationTests".*?\]\),', "", text, flags=re.S)
if trimmed == text:
    sys.exit("Testing.md's manifest has no MyServerIntegrationTests target to leave out")
open(path, "w").write(trimmed)
PY
  rm -r "$package/Tests/MyServerIntegrationTests"
  expected=2
fi
cd "$package"
swift build --build-tests
swift test --skip-build 2>&1 | tee "$work/test.log"
grep -qE "Test run with $expected tests.* passed" "$work/test.log" \
  || { echo "the adopter's tests did not all pass" >&2; exit 1; }
echo "a package made from Getting Started and Testing builds, and its $expected tests pass"
