#!/usr/bin/env bash
# Starts `apns mock-server` and the push gateway against it (token authentication, SQLite queue in
# a temporary folder), creates an API key for com.example.app and prints it with a curl to try.
#
#   bash Gateway/run-with-mock.sh           # serve on 127.0.0.1:8080 until Ctrl-C
#   bash Gateway/run-with-mock.sh --smoke   # POST, follow the outcome, /metrics, SIGTERM (CI); the
#                                           # gateway reaches the mock through tinyproxy (--proxy)
#   bash Gateway/run-with-mock.sh --fuzz N  # schemathesis (from PyPI) against openapi.yaml, N examples
#                                           # per operation: no 5xx, answers as the file describes
#
# Builds both first, in the repository's .build (Scripts/package.sh; the first build takes minutes).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
smoke=false
fuzz=""
[ "${1:-}" = "--smoke" ] && smoke=true
[ "${1:-}" = "--fuzz" ] && { smoke=true; fuzz=${2:-200}; }

source "$root/Scripts/mock-apns.sh"
build_quietly gateway-build.log . --product apns
build_quietly gateway-build.log Gateway --product apns-gateway
apns="$(bin_path)/apns"
gateway="$(bin_path)/apns-gateway"
start_mock_apns "$apns" --allow-frequent-token-updates

database="$work/queue.sqlite"
# The fuzz run's key may make 100,000 requests a second: a 429 (answered before the body is read)
# would pass schemathesis' checks without the body being judged.
rate=100
[ -n "$fuzz" ] && rate=100000
api_key=$("$gateway" add-key --database "$database" --name example --app com.example.app --rate "$rate")
port=8080
$smoke && port=0
proxy=()
if $smoke && [ -z "$fuzz" ]; then
  # The smoke run goes through an HTTP proxy (tinyproxy, Scripts/install-dependencies.sh), which
  # logs each CONNECT: the check below reads that the gateway's connection went through it.
  proxy_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  {
    printf 'Port %s\nListen 127.0.0.1\nTimeout 60\nLogLevel Info\nLogFile "%s"\n' "$proxy_port" "$work/proxy.log"
    [ "$(id -u)" -eq 0 ] && printf 'User nobody\nGroup nogroup\n'
  } >"$work/tinyproxy.conf"
  touch "$work/proxy.log" && chmod 666 "$work/proxy.log" && chmod 755 "$work"
  tinyproxy -d -c "$work/tinyproxy.conf" >/dev/null 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$proxy_port") 2>/dev/null && break; sleep 0.1; done
  proxy=(--proxy "http://127.0.0.1:$proxy_port")
fi
"$gateway" serve --database "$database" --port $port --apns-host "$listening" --ca-file "$work/ca.pem" \
  --key-file "$key_file" --key-id "$key_id" --team-id "$team_id" --log-level "${LOG_LEVEL:-info}" "${proxy[@]}" \
  >"$work/gateway.out" 2>"$work/gateway.log" &
gateway_pid=$!
pids+=($gateway_pid)
address=$(wait_for_listening "$work/gateway.out")
if [ -z "$address" ]; then cat "$work/gateway.log"; echo "the gateway did not start" >&2; exit 1; fi
echo "push gateway on http://$address (SQLite queue $database)"

token=00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0
if ! $smoke; then
  cat <<USAGE
API key for com.example.app: $api_key
try:
  curl -s -X POST http://$address/v1/notifications -H 'authorization: Bearer $api_key' \\
       -d '{"push-type":"alert","bundle-id":"com.example.app","alert":{"title":"Hi","body":"There"},"devices":["$token"]}'
  curl -s http://$address/v1/notifications/<id> -H 'authorization: Bearer $api_key'
USAGE
  tail -f "$work/gateway.log" &
  pids+=($!)
  wait "$gateway_pid"
  exit 0
fi

if [ -n "$fuzz" ]; then
  command -v schemathesis >/dev/null 2>&1 || pip install -q schemathesis >/dev/null 2>&1 || pip install -q --user schemathesis
  # Every check, positive_data_acceptance included: a body the schema allows is queued, and one it
  # refuses is a 4xx (Gateway/schemathesis.toml says which answers the schema cannot predict).
  schemathesis --config-file "$root/Gateway/schemathesis.toml" run "$root/Gateway/openapi.yaml" \
    --url "http://$address" -H "Authorization: Bearer $api_key" --checks all --max-examples "$fuzz" --no-color \
    | tee "$work/fuzz.log" | tail -25
  status=${PIPESTATUS[0]}
  kill -TERM "$gateway_pid"
  wait "$gateway_pid" || { echo "the gateway did not stop cleanly after the fuzz run" >&2; exit 1; }
  exit "$status"
fi

# --smoke
fail() { echo "smoke: $*" >&2; cat "$work/gateway.log" >&2; exit 1; }
body='{"push-type":"alert","bundle-id":"com.example.app","alert":{"title":"Hi","body":"There"},"devices":["'$token'"]}'
answer=$(curl -s -w ' %{http_code}' -X POST "http://$address/v1/notifications" -H "authorization: Bearer $api_key" -d "$body")
echo "POST /v1/notifications -> $answer"
[[ "$answer" == *' 202' ]] || fail "expected 202"
id=$(echo "$answer" | sed -E 's/.*"id":"([^"]+)".*/\1/')
for _ in $(seq 100); do
  progress=$(curl -s "http://$address/v1/notifications/$id" -H "authorization: Bearer $api_key")
  [[ "$progress" == *'"done":true'* ]] && break
  sleep 0.1
done
echo "GET /v1/notifications/$id -> $progress"
[[ "$progress" == *'"state":"accepted","status":200'* ]] || fail "expected the device-send accepted"
grep -q "CONNECT $listening" "$work/proxy.log" || fail "the gateway did not reach APNs through --proxy"
echo "through the proxy: $(grep -c "CONNECT $listening" "$work/proxy.log") CONNECT to $listening"
answer=$(curl -s -w ' %{http_code}' -X POST "http://$address/v1/notifications" -d "$body")
[[ "$answer" == *' 401' ]] || fail "expected 401 without a key, got $answer"
keys=$("$gateway" list-keys --database "$database")
echo "list-keys -> $keys"
[[ "$keys" == example*com.example.app ]] || fail "list-keys did not show the key"
[[ "$keys" != *"$api_key"* ]] || fail "list-keys printed the key itself"
metrics=$(curl -s "http://$address/metrics")
echo "$metrics" | grep -E '^apns_gateway_' | sort
echo "$metrics" | grep -qE '^apns_gateway_device_sends_total\{result="accepted",app="[^"]+"\} 1$' || fail "/metrics has no accepted device-send with its app"
kill -TERM "$gateway_pid"
wait "$gateway_pid" || fail "the gateway did not stop cleanly on SIGTERM"
echo "smoke: ok (through a proxy: POST, outcome, 401 without a key, list-keys, /metrics, graceful SIGTERM)"
