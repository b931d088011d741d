#!/usr/bin/env bash
# Starts `apns mock-server` and the push gateway against it (token authentication, SQLite queue in
# a temporary folder), creates an API key for com.example.app and prints it with a curl to try.
#
#   bash Gateway/run-with-mock.sh           # serve on 127.0.0.1:8080 until Ctrl-C
#   bash Gateway/run-with-mock.sh --smoke   # POST, follow the outcome, /metrics, SIGTERM (CI); the
#                                           # gateway reaches the mock through tinyproxy (--proxy)
#   bash Gateway/run-with-mock.sh --fuzz N  # schemathesis (from PyPI) against openapi.yaml, N examples
#                                           # per operation: no 5xx, answers as the file describes
#   bash Gateway/run-with-mock.sh --schedule  # a send-at kept across a restart (nothing reaches the
#                                           # mock before its time), a cancel, a batch of three
#   bash Gateway/run-with-mock.sh --traces  # traces to an OTLP collector stand-in: the POST (a child of
#                                           # the caller's traceparent), its send, the library's spans
#   bash Gateway/run-with-mock.sh --tls     # the guide's TLS recipe (Gateway/deploy/nginx.conf) in front:
#                                           # POST and /readyz over HTTPS, a renewed certificate
#                                           # served after `nginx -s reload`
#
# Builds both first, in the repository's .build (Scripts/package.sh; the first build takes minutes).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
smoke=false
fuzz=""
[ "${1:-}" = "--smoke" ] && smoke=true
[ "${1:-}" = "--fuzz" ] && { smoke=true; fuzz=${2:-200}; }
tls=false
[ "${1:-}" = "--tls" ] && { smoke=true; tls=true; }
traces=false
[ "${1:-}" = "--traces" ] && { smoke=true; traces=true; }
schedule=false
[ "${1:-}" = "--schedule" ] && { smoke=true; schedule=true; }

source "$root/Scripts/mock-apns.sh"
build_quietly gateway-build.log . --product apns
build_quietly gateway-build.log Gateway --product apns-gateway
apns="$(bin_path)/apns"
gateway="$(bin_path)/apns-gateway"
# The mock's console API tells the checks below what reached APNs, and when.
start_mock_apns "$apns" --allow-frequent-token-updates --console 0
console=$(awk '/^console/ { print $2 }' "$work/mock.out")

database="$work/queue.sqlite"
# The fuzz run's key may make 100,000 requests a second: a 429 (answered before the body is read)
# would pass schemathesis' checks without the body being judged.
rate=100
[ -n "$fuzz" ] && rate=100000
api_key=$("$gateway" add-key --database "$database" --name example --app com.example.app --rate "$rate")
port=8080
$smoke && port=0
proxy=()
if $traces; then
  collector_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  python3 "$root/Gateway/Tests/otlp_collector.py" "$collector_port" "$work/spans.jsonl" &
  pids+=($!)
  proxy=(--otlp-endpoint "http://127.0.0.1:$collector_port/v1/traces" --otlp-protocol http/json)
fi
if $smoke && [ -z "$fuzz" ] && ! $tls && ! $traces && ! $schedule; then
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
  # …and logs as JSON with an access log, which the check below reads line by line.
  proxy+=(--log-format json --access-log)
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
  # refuses is a 4xx (Gateway/schemathesis.toml says which answers the schema cannot predict). All
  # but use_after_free: DELETE /v1/notifications/{id} cancels what has not been sent, and the
  # notification stays readable with its outcomes (the cancelled ones among them), as documented.
  schemathesis --config-file "$root/Gateway/schemathesis.toml" run "$root/Gateway/openapi.yaml" \
    --url "http://$address" -H "Authorization: Bearer $api_key" --checks all --exclude-checks use_after_free \
    --max-examples "$fuzz" --no-color \
    | tee "$work/fuzz.log" | tail -25
  status=${PIPESTATUS[0]}
  kill -TERM "$gateway_pid"
  wait "$gateway_pid" || { echo "the gateway did not stop cleanly after the fuzz run" >&2; exit 1; }
  exit "$status"
fi

if $schedule; then
  fail() { echo "schedule: $*" >&2; cat "$work/gateway.log" >&2; exit 1; }
  now_ms() { python3 -c 'import time; print(int(time.time() * 1000))'; }
  reached() { curl -s "$console/api/requests?device=$1" | python3 -c 'import json, sys; r = json.load(sys.stdin)["requests"]; print(len(r), r[0]["received-at"] if r else 0)'; }
  due=$(($(now_ms) + 8000))
  body='{"push-type":"alert","bundle-id":"com.example.app","alert":"At its time","send-at":'$due',"devices":["'$token'"]}'
  answer=$(curl -s -w ' %{http_code}' -X POST "http://$address/v1/notifications" -H "authorization: Bearer $api_key" -d "$body")
  [[ "$answer" == *'"send-at":'$due*' 202' ]] || fail "expected 202 with its send-at: $answer"
  id=$(echo "$answer" | sed -E 's/.*"id":"([^"]+)".*/\1/')
  # A restart while it waits: the time is in the queue, not in the process.
  kill -TERM "$gateway_pid"
  wait "$gateway_pid" || fail "the gateway did not stop cleanly"
  "$gateway" serve --database "$database" --port 0 --apns-host "$listening" --ca-file "$work/ca.pem" \
    --key-file "$key_file" --key-id "$key_id" --team-id "$team_id" >"$work/gateway2.out" 2>>"$work/gateway.log" &
  gateway_pid=$!
  pids+=($gateway_pid)
  address=$(wait_for_listening "$work/gateway2.out")
  [ -n "$address" ] || fail "the gateway did not start again"
  while [ "$(now_ms)" -lt $((due - 1000)) ]; do
    [ "$(reached "$token" | cut -d' ' -f1)" = 0 ] || fail "sent before its time ($(reached "$token"), due $due)"
    sleep 0.5
  done
  for _ in $(seq 100); do [ "$(reached "$token" | cut -d' ' -f1)" = 1 ] && break; sleep 0.1; done
  read -r count at < <(reached "$token")
  [ "$count" = 1 ] && [ "$at" -ge "$due" ] || fail "expected one push at or after $due, got $count at $at"
  progress=$(curl -s "http://$address/v1/notifications/$id" -H "authorization: Bearer $api_key")
  [[ "$progress" == *'"state":"accepted"'* ]] || fail "not accepted: $progress"
  echo "send-at $due, across a restart: reached the mock at $at ($((at - due)) ms after its time), not before"
  # A cancel of a notification due in a minute: nothing sent, all of it cancelled.
  later='{"push-type":"alert","bundle-id":"com.example.app","alert":"Never","send-at":'$(($(now_ms) + 60000))',"devices":["'$token'","'${token/00fc/11fc}'"]}'
  id=$(curl -s -X POST "http://$address/v1/notifications" -H "authorization: Bearer $api_key" -d "$later" | sed -E 's/.*"id":"([^"]+)".*/\1/')
  cancel=$(curl -s -X DELETE "http://$address/v1/notifications/$id" -H "authorization: Bearer $api_key")
  [[ "$cancel" == *'"cancelled":2'* && "$cancel" == *'"cancelled-now":2'* && "$cancel" == *'"done":true'* ]] || fail "cancel: $cancel"
  echo "DELETE -> cancelled-now 2, done, nothing sent"
  # A batch of three different notifications, accepted item by item.
  batch='{"notifications":[{"push-type":"alert","bundle-id":"com.example.app","alert":"One","devices":["'$token'"]},{"push-type":"background","bundle-id":"com.example.app","data":{"sync":1},"devices":["'$token'"]},{"push-type":"alert","bundle-id":"com.example.app","alert":"Three","badge":3,"devices":["'$token'"]}]}'
  results=$(curl -s -X POST "http://$address/v1/notification-batches" -H "authorization: Bearer $api_key" -d "$batch")
  [ "$(echo "$results" | grep -o '"status":202' | wc -l)" = 3 ] || fail "batch: $results"
  for _ in $(seq 100); do [ "$(reached "$token" | cut -d' ' -f1)" = 4 ] && break; sleep 0.1; done
  [ "$(reached "$token" | cut -d' ' -f1)" = 4 ] || fail "the batch's three pushes did not all reach the mock"
  echo "a batch of three different notifications: three 202s, three pushes sent"
  kill -TERM "$gateway_pid"
  wait "$gateway_pid" || fail "the gateway did not stop cleanly on SIGTERM"
  echo "schedule: ok"
  exit 0
fi

if $traces; then
  fail() { echo "traces: $*" >&2; cat "$work/gateway.log" >&2; exit 1; }
  trace_id=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
  parent_id=$(python3 -c 'import secrets; print(secrets.token_hex(8))')
  body='{"push-type":"alert","bundle-id":"com.example.app","alert":"Traced","devices":["'$token'"]}'
  answer=$(curl -s -w ' %{http_code}' -X POST "http://$address/v1/notifications?wait=5" \
    -H "authorization: Bearer $api_key" -H "traceparent: 00-$trace_id-$parent_id-01" -d "$body")
  [[ "$answer" == *'"state":"accepted"'*' 200' ]] || fail "expected the outcome: $answer"
  # The batch processor exports within a second; SIGTERM exports what is left.
  kill -TERM "$gateway_pid"
  wait "$gateway_pid" || fail "the gateway did not stop cleanly on SIGTERM"
  python3 - "$work/spans.jsonl" "$trace_id" "$parent_id" <<'PY' || fail "the trace is not linked"
import base64, json, sys
log, trace_id, parent_id = sys.argv[1], sys.argv[2], sys.argv[3]
def hex_id(value):
    # OTLP/JSON writes ids in hex; a protobuf JSON writer may write bytes in base64.
    if value and len(value) in (12, 24) and not all(c in "0123456789abcdef" for c in value):
        return base64.b64decode(value).hex()
    return (value or "").lower()
spans = []
for line in open(log):
    for resource in json.loads(line).get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            spans += scope.get("spans", [])
ours = [s for s in spans if hex_id(s.get("traceId")) == trace_id]
by_parent = {}
for span in ours:
    by_parent.setdefault(hex_id(span.get("parentSpanId")), []).append(span)
server = by_parent.get(parent_id, [])
assert len(server) == 1, f"no one span under the caller's: {[(s['name'], hex_id(s.get('parentSpanId'))) for s in ours]}"
send = [s for s in by_parent.get(hex_id(server[0]["spanId"]), []) if s["name"] == "apns-gateway.send"]
assert len(send) == 1, f"no send span under {server[0]['name']}: {[s['name'] for s in ours]}"
library = [s["name"] for s in by_parent.get(hex_id(send[0]["spanId"]), []) if s["name"].startswith("apns.")]
assert library, f"no library span under the send: {[s['name'] for s in ours]}"
print(f"trace {trace_id}: caller -> {server[0]['name']} -> apns-gateway.send -> {', '.join(library)} ({len(ours)} spans)")
PY
  echo "traces: ok (the POST a child of the caller's traceparent, its send a child of the POST, the library's spans under it)"
  exit 0
fi

if $tls; then
  fail() { echo "tls: $*" >&2; cat "$work/gateway.log" "$work/nginx/error.log" >&2 2>/dev/null; exit 1; }
  # A CA and a certificate for localhost, made now; the recipe as it stands, with its paths and ports.
  mkdir -p "$work/nginx/tls"
  certificate() { # a new certificate for localhost, serial $1, signed by the CA
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj "/CN=gateway test CA" \
      -keyout "$work/ca-key.pem" -out "$work/gateway-ca.pem" 2>/dev/null </dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=localhost" \
      -keyout "$work/nginx/tls/key.pem" -out "$work/request.pem" 2>/dev/null
    openssl x509 -req -in "$work/request.pem" -CA "$work/gateway-ca.pem" -CAkey "$work/ca-key.pem" -days 1 \
      -set_serial "$1" -extfile <(printf 'subjectAltName=DNS:localhost,IP:127.0.0.1') \
      -out "$work/nginx/tls/cert.pem" 2>/dev/null
  }
  certificate 1001
  tls_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  sed -e "s|@RUNTIME@|$work/nginx|g" -e "s|@GATEWAY@|$address|g" -e "s|@LISTEN@|127.0.0.1:$tls_port|g" \
    "$root/Gateway/deploy/nginx.conf" >"$work/nginx/nginx.conf"
  nginx -c "$work/nginx/nginx.conf" -p "$work/nginx" -e "$work/nginx/error.log" || fail "nginx did not start"
  stop_nginx() { nginx -c "$work/nginx/nginx.conf" -p "$work/nginx" -e "$work/nginx/error.log" -s quit 2>/dev/null || true; }
  trap 'stop_nginx; stop_and_clean_up' EXIT
  https="https://localhost:$tls_port"
  for _ in $(seq 50); do curl -s --cacert "$work/gateway-ca.pem" "$https/healthz" >/dev/null && break; sleep 0.1; done
  body='{"push-type":"alert","bundle-id":"com.example.app","alert":"Over TLS","devices":["'$token'"]}'
  answer=$(curl -s --http2 --cacert "$work/gateway-ca.pem" -w ' %{http_code} %{http_version}' -X POST \
    "$https/v1/notifications?wait=5" -H "authorization: Bearer $api_key" -d "$body")
  echo "POST $https/v1/notifications?wait=5 -> $answer"
  [[ "$answer" == *'"state":"accepted"'*' 200 2' ]] || fail "expected the outcome over HTTP/2 and TLS"
  ready=$(curl -s --cacert "$work/gateway-ca.pem" "$https/readyz")
  [[ "$ready" == *'"status":"ready"'* ]] || fail "/readyz over TLS: $ready"
  plain=$(curl -s -o /dev/null -w '%{http_code}' "http://localhost:$tls_port/healthz" || true)
  [[ "$plain" != 2* ]] || fail "plain HTTP answered $plain on the TLS port"
  serial() { openssl s_client -connect "127.0.0.1:$tls_port" -servername localhost </dev/null 2>/dev/null | openssl x509 -noout -serial; }
  before=$(serial)
  certificate 1002 # renewed: a new CA and certificate in place, then a reload
  # The workers serving the old certificate. Until each has read its QUIT signal it still accepts
  # connections beside the new one (on a busy machine, for a while), so a connection that reached
  # the new worker says nothing about the next: the check waits for the old workers to be gone.
  old_workers=$(pgrep -P "$(cat "$work/nginx/nginx.pid")" || true)
  nginx -c "$work/nginx/nginx.conf" -p "$work/nginx" -e "$work/nginx/error.log" -s reload
  for _ in $(seq 300); do
    alive=""
    for pid in $old_workers; do kill -0 "$pid" 2>/dev/null && alive="$alive $pid"; done
    [ -z "$alive" ] && break
    sleep 0.1
  done
  [ -z "$alive" ] || fail "30 s after the reload the old workers$alive still run"
  after=$(serial)
  [ "$after" = "serial=03EA" ] || fail "after the reload the served certificate is $after, not the renewed one"
  curl -s --cacert "$work/gateway-ca.pem" "$https/healthz" | grep -q ok || fail "the renewed certificate does not verify"
  echo "certificate $before, renewed and reloaded: $after"
  stop_nginx
  kill -TERM "$gateway_pid"
  wait "$gateway_pid" || fail "the gateway did not stop cleanly on SIGTERM"
  echo "tls: ok (the guide's nginx recipe: POST with wait over HTTP/2 and TLS, /readyz, no plain HTTP, a renewed certificate reloaded)"
  exit 0
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
# Every line of the log is one JSON object; the access log names the key and never carries it.
python3 - "$work/gateway.log" "$api_key" "$token" <<'PY' || fail "the JSON log is not as it should be"
import json, sys
log, key, token = sys.argv[1], sys.argv[2], sys.argv[3]
text = open(log).read()
lines = [json.loads(line) for line in text.splitlines()]
access = [l for l in lines if l["label"] == "apns-gateway.access"]
posts = [l for l in access if l["metadata"]["http.request.method"] == "POST"]
assert posts and posts[0]["metadata"]["api_key.name"] == "example", posts
assert posts[0]["metadata"]["http.response.status_code"] == "202", posts
assert any(l["metadata"]["http.response.status_code"] == "401" for l in access), access
assert key not in text and token not in text and "Bearer" not in text, "a secret in the log"
print(f"log: {len(lines)} JSON lines, {len(access)} access lines, no key or token")
PY
echo "smoke: ok (through a proxy: POST, outcome, 401 without a key, list-keys, /metrics, JSON and access log, graceful SIGTERM)"
