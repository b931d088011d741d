#!/usr/bin/env bash
# Outcomes pushed to the app, end to end, through outages on both sides: the gateway's executable
# against `apns mock-server`, and an app's webhook endpoint (Gateway/Tests/webhook_receiver.py)
# that verifies each message with Standard Webhooks' own Python library (from PyPI).
#
#   bash Gateway/webhooks-e2e.sh sqlite      # one instance on a SQLite queue
#   bash Gateway/webhooks-e2e.sh postgres    # two instances on one PostgreSQL database
#                                            # (APNS_GATEWAY_POSTGRES_URL, Scripts/start-postgres.sh)
#
# The receiver refuses its first two messages (503); then it stops answering (SIGSTOP: connections
# are taken and never answered, so tries hang on the wire, leased) while more outcomes are made;
# one instance is killed with SIGKILL then; more notifications are posted, the instance started
# again, and only then does the receiver come back. Checked at the end: every device-send's final
# outcome (as GET /v1/notifications/{id} reports it) arrived in a message that verified, with its
# state; every 410 arrived as an `unregistered` event; an event that arrived twice came again under
# the same webhook-id; the outbox is empty (`webhook list`, the gauges on /metrics).
#
# Builds both programs first, in the repository's .build (Scripts/package.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
backend=${1:?sqlite or postgres}
case "$backend" in sqlite | postgres) ;; *) echo "sqlite or postgres, not $backend" >&2; exit 2 ;; esac

source "$root/Scripts/mock-apns.sh"
build_quietly gateway-build.log . --product apns
build_quietly gateway-build.log Gateway --product apns-gateway
apns="$(bin_path)/apns"
gateway="$(bin_path)/apns-gateway"
fail() {
  echo "webhooks e2e ($backend): $*" >&2
  for log in "$work"/gateway-*.log; do echo "-- $log" >&2; tail -20 "$log" >&2; done
  exit 1
}

# The app's side: Standard Webhooks' Python library in a virtual environment of its own.
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q standardwebhooks >"$work/pip.log" 2>&1 || { cat "$work/pip.log" >&2; exit 1; }

unregistered=00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0
start_mock_apns "$apns" --allow-frequent-token-updates --reject "$unregistered:Unregistered:1700000000000"

if [ "$backend" = sqlite ]; then
  database="$work/queue.sqlite"
  instances=(a)
else
  url=${APNS_GATEWAY_POSTGRES_URL:?give a PostgreSQL URL: export APNS_GATEWAY_POSTGRES_URL=\$(bash Scripts/start-postgres.sh)}
  name="webhooks_e2e_$$"
  psql -q "$url" -c "CREATE DATABASE $name"
  trap 'stop_and_clean_up; psql -q "$url" -c "DROP DATABASE IF EXISTS $name WITH (FORCE)" >/dev/null 2>&1 || true' EXIT
  database="${url%/*}/$name"
  instances=(a b)
fi
head -c 32 /dev/urandom | base64 >"$work/kek"
common=(--database "$database" --credential-key-file "$work/kek")
api_key=$("$gateway" add-key --database "$database" --name e2e --app com.example.app --rate 1000 2>>"$work/setup.log")
"$gateway" credential add "${common[@]}" --name team --app com.example.app --key-file "$key_file" \
  --key-id "$key_id" --team-id "$team_id" --environment sandbox --apns-host "$listening" >/dev/null 2>>"$work/setup.log"
receiver_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export WEBHOOK_SECRET="whsec_$(head -c 32 /dev/urandom | base64)"
"$gateway" webhook add "${common[@]}" --name hooks --app com.example.app \
  --url "http://127.0.0.1:$receiver_port/events" --secret-env WEBHOOK_SECRET >/dev/null 2>>"$work/setup.log"

received="$work/received.jsonl"
touch "$received"
start_receiver() {
  "$work/venv/bin/python" "$root/Gateway/Tests/webhook_receiver.py" "$receiver_port" "$received" 2 \
    >"$work/receiver.out" 2>&1 &
  receiver_pid=$!
  pids+=($receiver_pid)
  for _ in $(seq 100); do grep -q listening "$work/receiver.out" && return 0; sleep 0.1; done
  cat "$work/receiver.out" >&2
  fail "the receiver did not start"
}
declare -A gateway_pid address
start_gateway() {
  local instance=$1
  : >"$work/gateway-$instance.out"
  "$gateway" serve "${common[@]}" --instance "$instance" --port 0 --ca-file "$work/ca.pem" --log-level info \
    >"$work/gateway-$instance.out" 2>>"$work/gateway-$instance.log" &
  gateway_pid[$instance]=$!
  pids+=($!)
  address[$instance]=$(wait_for_listening "$work/gateway-$instance.out")
  [ -n "${address[$instance]}" ] || fail "instance $instance did not start"
}
notifications=()
# post INSTANCE COUNT: COUNT notifications of three devices each, one of them unregistered.
post() {
  local instance=$1 count=$2 i answer
  for i in $(seq "$count"); do
    local n=${#notifications[@]}
    local body='{"push-type":"alert","bundle-id":"com.example.app","alert":{"title":"Hi","body":"'$n'"},"devices":["'$(printf '%064x' $((2 * n + 1)))'","'$(printf '%064x' $((2 * n + 2)))'","'$unregistered'"]}'
    answer=$(curl -s -w ' %{http_code}' -X POST "http://${address[$instance]}/v1/notifications" \
      -H "authorization: Bearer $api_key" -d "$body")
    [[ "$answer" == *' 202' ]] || fail "POST answered $answer"
    notifications+=("$(echo "$answer" | sed -E 's/.*"id":"([^"]+)".*/\1/')")
  done
}
# outcomes INSTANCE: each notification's device-sends as "notification token state" lines, once all
# are done.
outcomes() {
  local id progress
  for id in "${notifications[@]}"; do
    for _ in $(seq 300); do
      progress=$(curl -s "http://${address[$1]}/v1/notifications/$id" -H "authorization: Bearer $api_key")
      [[ "$progress" == *'"done":true'* ]] && break
      sleep 0.1
    done
    [[ "$progress" == *'"done":true'* ]] || fail "notification $id not done: $progress"
    echo "$progress" | python3 -c 'import json, sys
p = json.load(sys.stdin)
for d in p["deliveries"]: print(p["id"], d["token"], d["state"])'
  done
}

start_receiver
for instance in "${instances[@]}"; do start_gateway "$instance"; done
last=${instances[-1]}

# 1. The receiver refuses its first two messages, then takes them.
post a 5
[ "$backend" = postgres ] && post b 5
for _ in $(seq 300); do [ -s "$received" ] && break; sleep 0.1; done
[ -s "$received" ] || fail "no message was taken within 30 s"
echo "phase 1: the receiver refused 2 messages, then took $(wc -l <"$received")"

# 2. The receiver stops answering; more outcomes are made; instance a is killed while its tries hang.
kill -STOP "$receiver_pid"
post a 5
[ "$backend" = postgres ] && post b 5
outcomes "$last" >/dev/null
sleep 2 # a poll of the outbox: messages made of these outcomes, and tried (hanging)
kill -KILL "${gateway_pid[a]}"
wait "${gateway_pid[a]}" 2>/dev/null || true
echo "phase 2: receiver stopped, instance a killed (SIGKILL) with its tries on the wire"

# 3. More notifications while a is down (to b; on SQLite, to a once started again), a starts again,
#    then the receiver comes back.
[ "$backend" = postgres ] && post b 5
start_gateway a
[ "$backend" = sqlite ] && post a 5
sleep 1
kill -CONT "$receiver_pid"
echo "phase 3: instance a started again, receiver back"

outcomes "$last" | sort >"$work/expected"
expected_count=$(wc -l <"$work/expected")
check() {
  "$work/venv/bin/python" - "$received" "$work/expected" "$unregistered" <<'PY'
import json, sys
received, expected, unregistered = sys.argv[1], sys.argv[2], sys.argv[3]
lines = [json.loads(line) for line in open(received)]
bad = [line for line in lines if not line["verified"]]
if bad:
    sys.exit(f"messages that did not verify: {bad}")
seen, ids, unreg, repeats = {}, {}, set(), 0
for message in lines:
    for event in message["data"]:
        if event["type"] == "outcome":
            key = (event["notification"], event["token"])
            if key in ids and ids[key] != message["id"]:
                sys.exit(f"{key} came under two ids: {ids[key]} and {message['id']}")
            repeats += key in ids
            ids[key] = message["id"]
            seen[key] = event["state"]
        elif event["type"] == "unregistered":
            unreg.add(event["token"])
want = {}
for line in open(expected):
    notification, token, state = line.split()
    want[(notification, token)] = state
missing = [key for key in want if key not in seen]
if missing:
    print(f"waiting for {len(missing)} of {len(want)} outcomes")
    sys.exit(3)
wrong = [(key, seen[key], want[key]) for key in want if seen[key] != want[key]]
if wrong or len(seen) != len(want):
    sys.exit(f"outcomes that differ from the gateway's: {wrong}; {len(seen)} seen, {len(want)} expected")
if unreg != {unregistered}:
    sys.exit(f"unregistered events: {unreg}")
print(f"{len(want)} outcomes in {len(lines)} messages ({len({m['id'] for m in lines})} ids), each verified; "
      f"{repeats} events again under their id; unregistered: the rejected token")
PY
}
status=3
for _ in $(seq 90); do
  status=0
  result=$(check 2>&1) || status=$?
  [ "$status" = 3 ] || break
  sleep 1
done
echo "$result"
[ "$status" = 0 ] || fail "$result"
[ "$expected_count" = $((${#notifications[@]} * 3)) ] || fail "expected $((${#notifications[@]} * 3)) outcomes, the gateway lists $expected_count"

for _ in $(seq 50); do
  listing=$("$gateway" webhook list "${common[@]}" 2>>"$work/setup.log")
  [[ "$listing" == *$'\twaiting 0\tpending 0\t'* ]] && break
  sleep 0.2
done
echo "webhook list -> $listing"
[[ "$listing" == *$'\twaiting 0\tpending 0\t'* ]] || fail "the outbox is not empty"
# The gauges are read at each poll of the outbox (every second).
for _ in $(seq 30); do
  metrics=$(curl -s "http://${address[a]}/metrics")
  echo "$metrics" | grep -qE '^apns_gateway_webhook_pending_messages 0(\.0)?$' && break
  sleep 0.2
done
echo "$metrics" | grep -E '^apns_gateway_webhook_' | sort
echo "$metrics" | grep -qE '^apns_gateway_webhook_pending_messages 0(\.0)?$' || fail "/metrics: pending messages not 0"
echo "$metrics" | grep -qE '^apns_gateway_webhook_waiting_events 0(\.0)?$' || fail "/metrics: waiting events not 0"
echo "$metrics" | grep -qE '^apns_gateway_webhook_tries_total\{result="delivered"\} [1-9]' || fail "/metrics: no delivered try"
for instance in "${instances[@]}"; do
  kill -TERM "${gateway_pid[$instance]}"
  wait "${gateway_pid[$instance]}" || fail "instance $instance did not stop cleanly"
done
echo "webhooks e2e ($backend): ok"
