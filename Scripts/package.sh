#!/usr/bin/env bash
# Runs a swift command on one of this repository's packages in the repository's own .build, where
# the library and its tests are built: the gateway, the Vapor integration and the example service
# then compile only what is theirs (Vapor, Hummingbird, GRDB, postgres-nio…), not SwiftNIO,
# BoringSSL and the library a second time. SwiftPM keeps one set of checkouts and build products
# per folder and rebuilds a module only when its compile command changes, so the packages can take
# turns in it. Every script that builds them goes through here.
#
# What SwiftPM does not expect is a different package in the same folder: it keeps the last build
# plan there and reuses it while the files that plan was made from are unchanged, whichever package
# asks (once, the example service's build built the gateway's plan and no PushService). So the plan
# is removed before each command here and again after it, for whatever builds in the folder next:
# planning anew takes seconds and recompiles nothing.
#
#   bash Scripts/package.sh Gateway build --product apns-gateway
#   bash Scripts/package.sh VaporIntegration test
#   bash Scripts/package.sh Examples/PushService build --show-bin-path
#   bash Scripts/package.sh . build --product apns     # the library's package itself
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 2 ] || { echo "usage: bash Scripts/package.sh PACKAGE-FOLDER SWIFT-COMMAND [ARGUMENTS…]" >&2; exit 2; }
package=$1
command=$2
shift 2
forget_plan() {
  local build="$root/.build"
  rm -f "$build/debug.yaml" "$build/release.yaml" "$build/plugin-tools.yaml" \
    "$build"/*/{debug,release}/description.json "$build"/*/{debug,release}/plugin-tools-description.json
}
forget_plan
trap forget_plan EXIT
swift "$command" --package-path "$root/$package" --scratch-path "$root/.build" "$@"
