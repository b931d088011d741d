#!/usr/bin/env bash
# The mock's console in a real browser: `apns mock-server --console`, then
# Tests/Browser/console_test.py drives headless Chromium (Debian's chromium and chromium-driver,
# installed when missing) through Selenium (PyPI, in a virtual environment of its own), and curl
# sends the pushes as a client in another language would. It makes the console's screenshot in
# Sources/APNs.docc/Resources.
#
#   bash Scripts/console-browser-test.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/Scripts/install-dependencies.sh" --browser
source "$root/Scripts/mock-apns.sh"
build_quietly console-build.log . --product apns
start_mock_apns "$(bin_path)/apns" --console 0
console=$(awk '/^console/ { print $2 }' "$work/mock.out")
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q selenium >"$work/pip.log" 2>&1 || { cat "$work/pip.log" >&2; exit 1; }
mkdir -p "$root/Sources/APNs.docc/Resources"
"$work/venv/bin/python" "$root/Tests/Browser/console_test.py" "$console" "$listening" "$work" \
  "$root/Sources/APNs.docc/Resources/mock-console.png"
