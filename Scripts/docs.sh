#!/usr/bin/env bash
# The documentation, on the standard route (swift-docc-plugin, what Swift Package Index runs), for
# each documented target (.spi.yml names the same ones); any DocC warning fails it.
#
#   bash Scripts/docs.sh              # archives in .build/plugins/Swift-DocC/outputs/
#   bash Scripts/docs.sh --coverage   # and DocC's documentation coverage summary
#   bash Scripts/docs.sh --preview    # serve APNs' documentation on http://localhost:8080
#   bash Scripts/docs.sh --screenshots /tmp/shots   # what a reader sees: the landing page and
#                                     # three articles, served locally, in headless Chromium
#                                     # (Debian's `chromium`) at 1280 px
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" == "--screenshots" ]]; then
  out=${2:?"--screenshots needs a folder"}
  site=$(mktemp -d)
  mkdir -p "$out"
  swift package --disable-sandbox generate-documentation --target APNs --warnings-as-errors \
    --transform-for-static-hosting --output-path "$site"
  python3 -m http.server 8765 --bind 127.0.0.1 --directory "$site" >/dev/null 2>&1 &
  server=$!
  trap 'kill $server; rm -rf "$site"' EXIT
  sleep 1
  for page in apns apns/gettingstarted apns/liveactivitypushtype apns/errors; do
    chromium --headless=new --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,1600 \
      --virtual-time-budget=5000 --screenshot="$out/${page//\//-}.png" \
      "http://127.0.0.1:8765/documentation/$page/" 2>/dev/null
  done
  ls "$out"
  exit 0
fi
if [[ "${1:-}" == "--preview" ]]; then
  exec swift package --disable-sandbox preview-documentation --target APNs
fi
extra=()
if [[ "${1:-}" == "--coverage" ]]; then extra=(--experimental-documentation-coverage --coverage-summary-level brief); fi
for target in APNs APNsTesting APNsMockServer; do
  swift package --disable-sandbox generate-documentation --target "$target" --warnings-as-errors "${extra[@]}"
done
