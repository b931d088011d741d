#!/usr/bin/env bash
# Starts `apns mock-server` and the example Vapor app (VaporNotify) against it.
#
#   bash VaporIntegration/run-with-mock.sh           # serve on 127.0.0.1:8080 until Ctrl-C
#   bash VaporIntegration/run-with-mock.sh --smoke   # an alert, a Live Activity update, a bad token,
#                                                    # then SIGTERM with sends in flight (CI)
#
# Builds both first, in the repository's .build (Scripts/package.sh; Vapor's first build takes minutes).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
smoke=false
[ "${1:-}" = "--smoke" ] && smoke=true

source "$root/Scripts/mock-apns.sh"
build_quietly vapor-notify-build.log . --product apns
build_quietly vapor-notify-build.log VaporIntegration --product VaporNotify
apns="$(bin_path)/apns"
app="$(bin_path)/VaporNotify"
# Every answer 1.5 s late in the smoke run, so that SIGTERM finds sends in flight.
if $smoke; then start_mock_apns "$apns" --fault delay:1500; else start_mock_apns "$apns"; fi

port=8080
$smoke && port=$((20000 + RANDOM % 20000))
APNS_HOST="$listening" APNS_CA_FILE="$work/ca.pem" APNS_KEY_FILE="$key_file" APNS_KEY_ID="$key_id" \
  APNS_TEAM_ID="$team_id" APNS_TOPIC=com.example.app \
  "$app" serve --hostname 127.0.0.1 --port "$port" --env production >"$work/app.log" 2>&1 &
app_pid=$!
pids+=($app_pid)
for _ in $(seq 300); do grep -q 'Server started' "$work/app.log" 2>/dev/null && break; sleep 0.1; done
grep -q 'Server started' "$work/app.log" || { cat "$work/app.log"; echo "the app did not start" >&2; exit 1; }
address="127.0.0.1:$port"
echo "VaporNotify on http://$address"

token=00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0
if ! $smoke; then
  cat <<USAGE
try:
  curl -s -X POST http://$address/notify -H 'content-type: application/json' \\
       -d '{"token":"$token","title":"Hi","body":"There"}'
  curl -s -X POST http://$address/deliveries/$token -H 'content-type: application/json' -d '{"stopsAway":2}'
USAGE
  tail -f "$work/app.log" &
  pids+=($!)
  wait "$app_pid"
  exit 0
fi

fail() { echo "smoke: $*" >&2; cat "$work/app.log" >&2; exit 1; }
post() { curl -s -m 30 -w ' %{http_code}' -X POST "http://$address/$1" -H 'content-type: application/json' -d "$2"; }
answer=$(post notify '{"token":"'$token'","title":"Hi","body":"There"}')
echo "POST /notify -> $answer"
[[ "$answer" == *'"status":200'*' 200' ]] || fail "expected 200 with APNs' status 200"
answer=$(post "deliveries/$token" '{"stopsAway":2}')
echo "POST /deliveries/TOKEN -> $answer"
[[ "$answer" == *'"status":200'*' 200' ]] || fail "expected 200 with APNs' status 200"
answer=$(post notify '{"token":"xyz","title":"Hi","body":"There"}')
echo "POST /notify (bad token) -> $answer"
[[ "$answer" == *' 400' ]] || fail "expected 400 for a bad token"

# Ten sends in flight (each waits 1.5 s for APNs), then SIGTERM: every one is answered 200 and the
# app exits 0.
in_flight=()
for i in $(seq 10); do
  post notify '{"token":"'$token'","title":"In flight","body":"'$i'"}' >"$work/in-flight-$i" &
  in_flight+=($!)
done
sleep 0.7
kill -TERM "$app_pid"
status=0
wait "$app_pid" || status=$?
wait "${in_flight[@]}" || true
[ "$status" -eq 0 ] || fail "the app exited $status on SIGTERM"
for i in $(seq 10); do
  [[ "$(cat "$work/in-flight-$i")" == *'"status":200'*' 200' ]] || fail "send $i in flight at SIGTERM: $(cat "$work/in-flight-$i")"
done
echo "smoke: ok (alert, Live Activity update, bad token → 400; SIGTERM with 10 sends in flight: all 200, exit 0)"
