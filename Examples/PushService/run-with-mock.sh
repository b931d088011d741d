#!/usr/bin/env bash
# Starts `apns mock-server` and the push service against it, with token authentication.
#
#   bash Examples/PushService/run-with-mock.sh           # serve on 127.0.0.1:8080 until Ctrl-C
#   bash Examples/PushService/run-with-mock.sh --smoke   # one POST /notify and GET /metrics, then stop (CI)
#
# Builds both first, in the repository's .build (Scripts/package.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
smoke=false
[ "${1:-}" = "--smoke" ] && smoke=true

source "$root/Scripts/mock-apns.sh"
build_quietly push-service-build.log . --product apns
build_quietly push-service-build.log Examples/PushService
apns="$(bin_path)/apns"
service="$(bin_path)/PushService"
start_mock_apns "$apns"

port=8080
$smoke && port=0
APNS_HOST="$listening" APNS_CA_FILE="$work/ca.pem" APNS_KEY_FILE="$key_file" APNS_KEY_ID="$key_id" \
  APNS_TEAM_ID="$team_id" APNS_TOPIC=com.example.app PORT=$port LOG_LEVEL="${LOG_LEVEL:-info}" \
  "$service" >"$work/service.out" 2>"$work/service.log" &
service_pid=$!
pids+=($service_pid)
address=$(wait_for_listening "$work/service.out")
if [ -z "$address" ]; then cat "$work/service.log"; echo "the service did not start" >&2; exit 1; fi
echo "push service on http://$address"

if ! $smoke; then
  cat <<USAGE
try:
  curl -s -X POST http://$address/notify -H 'content-type: application/json' \\
       -d '{"type":"alert","token":"00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0","title":"Hi","body":"There"}'
  curl -s http://$address/metrics | grep apns_
USAGE
  tail -f "$work/service.log" &
  pids+=($!)
  wait "$service_pid"
  exit 0
fi

# --smoke: one push of each type, a bad token, and the metrics.
token=00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0
fail() { echo "smoke: $*" >&2; cat "$work/service.log" >&2; exit 1; }
for body in \
  '{"type":"alert","token":"'$token'","title":"Hi","body":"There"}' \
  '{"type":"background","token":"'$token'","message":"sync"}' \
  '{"type":"voip","token":"'$token'","message":"Alice"}'; do
  answer=$(curl -s -w ' %{http_code}' -X POST "http://$address/notify" -H 'content-type: application/json' -d "$body")
  echo "POST /notify $body -> $answer"
  [[ "$answer" == *'"status":200'*' 202' ]] || fail "expected 202 with status 200"
done
answer=$(curl -s -w ' %{http_code}' -X POST "http://$address/notify" -H 'content-type: application/json' -d '{"token":"xyz"}')
echo "POST /notify {\"token\":\"xyz\"} -> $answer"
[[ "$answer" == *' 400' ]] || fail "expected 400 for a bad token"
metrics=$(curl -s "http://$address/metrics")
echo "$metrics" | grep '^apns_' | grep -E 'apns_sends\{|apns_connections_opened|apns_tokens_minted' | sort
for type in alert background voip; do
  echo "$metrics" | grep -E "^apns_sends\{.*apns_push_type=\"$type\".*apns_outcome=\"accepted\".*\} 1$" >/dev/null \
    || echo "$metrics" | grep -E "^apns_sends\{.*apns_outcome=\"accepted\".*apns_push_type=\"$type\".*\} 1$" >/dev/null \
    || fail "/metrics has no accepted $type send"
done
kill -TERM "$service_pid"
wait "$service_pid" || fail "the service did not stop cleanly on SIGTERM"
grep -q 'APNs connection closed' "$work/service.log" || fail "the connector did not close its connection on shutdown"
echo "smoke: ok (POST /notify for alert, background and voip; /metrics; graceful SIGTERM)"
