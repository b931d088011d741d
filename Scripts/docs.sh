#!/usr/bin/env bash
# The documentation, on the standard route (swift-docc-plugin, what Swift Package Index runs), for
# each documented target (.spi.yml names the same ones); any DocC warning fails it.
#
#   bash Scripts/docs.sh              # archives in .build/plugins/Swift-DocC/outputs/
#   bash Scripts/docs.sh --coverage   # and DocC's documentation coverage summary
#   bash Scripts/docs.sh --preview    # serve APNs' documentation on http://localhost:8080
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" == "--preview" ]]; then
  exec swift package --disable-sandbox preview-documentation --target APNs
fi
extra=()
if [[ "${1:-}" == "--coverage" ]]; then extra=(--experimental-documentation-coverage --coverage-summary-level brief); fi
for target in APNs APNsTesting APNsMockServer; do
  swift package --disable-sandbox generate-documentation --target "$target" --warnings-as-errors "${extra[@]}"
done
