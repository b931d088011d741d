#!/usr/bin/env bash
# Instructions per push, counted by valgrind --tool=callgrind: the same binary and inputs give the
# same count whatever else the machine is doing, so small differences show where seconds cannot.
# Each contender runs twice, with SMALL and LARGE pushes; the difference of the two totals over the
# difference of the counts is the cost of one push, without start-up, the TLS handshake or the
# warm-up. The mock server runs natively in its own process, started by this script.
#
#   bash Benchmarks/callgrind.sh                 # 2000 and 12000 pushes
#   bash Benchmarks/callgrind.sh 1000 5000 singles libcurl
#
# Contenders (APNsBenchmark --only): observed (the bulk send through a connector with no-op
# logging, metrics and tracing: what every user runs), unobserved (the same with none at all),
# singles (a task group of 100 single sends), libcurl (the C multi loop, libcurl alone), coalesced
# (the C loop corking its connection as swift-apns does), executor (the bulk send from a task that
# prefers the connector's taskExecutor: all of it on one thread).
# Valgrind 3.19 cannot read the DWARF 5 that Swift writes, so it runs a copy without debug info;
# the call graphs (.build-callgrind/*.out, for callgrind_annotate) name functions from the symbol
# table.
set -euo pipefail
cd "$(dirname "$0")/.."
small=${1:-2000}
large=${2:-12000}
shift $(( $# < 2 ? $# : 2 ))
contenders=("$@")
[ ${#contenders[@]} -eq 0 ] && contenders=(observed unobserved singles libcurl coalesced executor)
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
swift build -c release --product APNsBenchmark >/dev/null
out=.build-callgrind
mkdir -p "$out"
objcopy --strip-debug "$(swift build -c release --show-bin-path)/APNsBenchmark" "$out/APNsBenchmark"

# The server: started here (a process under valgrind cannot spawn one), natively, on a fresh key.
"$out/APNsBenchmark" --write-key "$out/key.json"
"$out/APNsBenchmark" --serve --key-file "$out/key.json" >"$out/server.out" &
server=$!
trap 'kill -9 $server 2>/dev/null' EXIT
for _ in $(seq 100); do grep -q '^port ' "$out/server.out" 2>/dev/null && break; sleep 0.1; done
port=$(awk '/^port /{print $2}' "$out/server.out")
[ -n "$port" ] || { echo "the mock server did not start" >&2; exit 1; }

instructions() {
  local log="$out/$1-$2.log"
  valgrind --tool=callgrind --callgrind-out-file="$out/$1-$2.out" "$out/APNsBenchmark" --only "$1" --count "$2" \
    --external-server "$port" --key-file "$out/key.json" >"$log" 2>&1 \
    || { echo "valgrind failed for $1 $2: see $log" >&2; exit 1; }
  grep -oE 'Collected : [0-9]+' "$log" | grep -oE '[0-9]+$'
}

printf '%-12s %18s %18s %16s\n' contender "instructions@$small" "instructions@$large" "per push"
for contender in "${contenders[@]}"; do
  a=$(instructions "$contender" "$small")
  b=$(instructions "$contender" "$large")
  printf '%-12s %18s %18s %16s\n' "$contender" "$a" "$b" "$(( (b - a) / (large - small) ))"
done
