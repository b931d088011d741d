#!/usr/bin/env bash
# Builds the libFuzzer harnesses (swiftc -sanitize=fuzzer,address) and runs each for RUNS inputs.
#
#   bash Fuzz/run.sh              # 1,000,000 inputs each (minutes)
#   bash Fuzz/run.sh 20000        # a short run (CI)
#   bash Fuzz/run.sh 20000 mock   # only the named harnesses
#   bash Fuzz/run.sh --typecheck  # only that the fuzzed files still compile alone, and the harnesses
#                                 # against them (half a minute; the fast tier runs it, so a file they
#                                 # need, or a type a harness uses that changed, fails before the slow one)
#
# Harnesses (Fuzz/Harnesses): responses (status, headers, body from the server), json (writer and
# app-data encoder: output must parse and round-trip), tokens (device token and apns-id parsing),
# credentials (.p8, PEM, encrypted PEM, PKCS#12 and DER certificates through libcrypto, Apple's topic
# list), mock (the mock server's request validation: any request gets an answer APNs could give),
# options (transport settings, send timeouts and retry policies: accepted exactly as documented,
# and no arithmetic on an accepted value overflows).
# Any crash, leak (LeakSanitizer,
# on by default with ASan on Linux) or violated invariant fails the run; its input is kept in
# .build-fuzz/artifacts. Prints one line per harness and exits non-zero if any failed.
# Everything runs two at a time, for the two cores of the machines this project runs on.
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-1000000}
harnesses=${2:-responses json tokens credentials mock options}
out=.build-fuzz
mkdir -p "$out/artifacts"
flags=(-sanitize=fuzzer,address -parse-as-library -O -g -swift-version 6 -package-name swift_apns)
# What the harnesses fuzz is compiled once, as the module APNs it is part of, with -enable-testing
# so that each harness (a module of its own, `@testable import APNs`) reaches its internals:
# - Sources/APNsCore: the DSL, JSON, tokens and responses;
# - the credential loaders, which import nothing more than Foundation and CCrypto (the rest of APNs
#   imports swift-log, swift-metrics, tracing and service-lifecycle, which a swiftc-only build does
#   not have);
# - the transport settings, retry policies and what checks them, without the transport itself.
# Each harness then compiles only itself: the whole-module compile of the library, instrumented
# for the fuzzer and AddressSanitizer, is the stage's cost, and it is paid once, not per harness.
library=$(find Sources/APNsCore Sources/APNs/Credentials -name '*.swift' | sort)
library+=" Sources/APNs/RetryPolicy.swift Sources/APNs/RetryWait.swift Sources/APNs/Backoff.swift Sources/APNs/Connectors/TransportConfiguration.swift"
library+=" Sources/APNs/Connectors/Proxy.swift Sources/APNs/Transport/CircuitBreaker.swift"
library+=" Sources/APNs/Transport/Duration+Transport.swift Sources/APNs/Transport/StreamIdle.swift"
library+=" Sources/APNs/Transport/PoolGrowth.swift Sources/APNs/Transport/CycleWatch.swift"
# The mock harness needs only the validator and what it reads (the rest of the mock imports SwiftNIO
# and swift-crypto): it is compiled into a module named like the mock's, with its own context.
mock=(Sources/APNsMockServer/{ValidationContext,RequestValidator,PayloadShape,RecordedRequest}.swift)
maps=(-Xcc -fmodule-map-file=Sources/CCurl/module.modulemap -Xcc -fmodule-map-file=Sources/CCrypto/module.modulemap)
links=(-I "$out" -L "$out" -lAPNs -lcurl -lssl -lcrypto)
quiet() { grep -v -E "Cannot export local symbol|^$" || true; }

# The library's file list above is hand-kept: a file it newly needs fails here, in seconds, with
# the compiler's words, instead of after the slow tier's sanitizers.
if [ "$runs" = --typecheck ]; then
  # shellcheck disable=SC2086 # the file list is split on purpose (no path has a space)
  if ! swiftc -typecheck -parse-as-library -swift-version 6 -package-name swift_apns -module-name APNs \
    "${maps[@]}" $library; then
    echo "the fuzzed library's files (Fuzz/run.sh, library=) no longer compile alone: add the file they need" >&2
    exit 1
  fi
  echo "the fuzzed library's files compile alone"
  # The harnesses against that library's module (its interface only, no code): a type a harness
  # uses that changed fails here too, not only in the slow tier's fuzz stage.
  checked=$(mktemp -d)
  trap 'rm -rf "$checked"' EXIT
  # shellcheck disable=SC2086
  if ! swiftc -emit-module -parse-as-library -swift-version 6 -package-name swift_apns -module-name APNs \
    -enable-testing "${maps[@]}" -emit-module-path "$checked/APNs.swiftmodule" $library; then
    echo "the fuzzed library's module could not be made for the harnesses" >&2
    exit 1
  fi
  check=(-typecheck -parse-as-library -swift-version 6 -package-name swift_apns -I "$checked" "${maps[@]}")
  for name in responses json tokens credentials options; do
    [ "$name" = json ] && file=Fuzz/Harnesses/JSON.swift || file="Fuzz/Harnesses/$(tr a-z A-Z <<< "${name:0:1}")${name:1}.swift"
    swiftc "${check[@]}" -module-name "Fuzz_$name" Fuzz/Harnesses/FuzzInput.swift "$file" \
      || { echo "the $name harness ($file) no longer compiles" >&2; exit 1; }
  done
  swiftc "${check[@]}" -module-name APNsMockServer "${mock[@]}" Fuzz/Harnesses/FuzzInput.swift \
    Fuzz/Harnesses/MockRequests.swift || { echo "the mock harness no longer compiles" >&2; exit 1; }
  echo "the fuzz harnesses compile against them"
  exit 0
fi

build_library() {
  # shellcheck disable=SC2086 # the file list is split on purpose (no path has a space)
  if [ -f "$out/libAPNs.a" ] && [ "$out/libAPNs.a" -nt "$0" ] \
    && [ -z "$(find $library -newer "$out/libAPNs.a")" ]; then
    return 0
  fi
  # shellcheck disable=SC2086
  swiftc "${flags[@]}" -enable-testing -num-threads 2 -module-name APNs "${maps[@]}" -emit-module \
    -emit-module-path "$out/APNs.swiftmodule" -emit-library -static -o "$out/libAPNs.a" $library 2>&1 | quiet
  [ -f "$out/libAPNs.a" ]
}

build() {
  local name=$1 file
  case $name in
    mock)
      swiftc "${flags[@]}" -module-name APNsMockServer "${maps[@]}" "${mock[@]}" Fuzz/Harnesses/FuzzInput.swift \
        Fuzz/Harnesses/MockRequests.swift "${links[@]}" -o "$out/$name" 2>&1 | quiet ;;
    *)
      file="Fuzz/Harnesses/$(tr a-z A-Z <<< "${name:0:1}")${name:1}.swift"
      swiftc "${flags[@]}" -module-name "Fuzz_$name" "${maps[@]}" Fuzz/Harnesses/FuzzInput.swift "$file" \
        "${links[@]}" -o "$out/$name" 2>&1 | quiet ;;
  esac
}

# The library first (its LLVM half on both cores), then the harnesses two at a time.
targets=()
for name in $harnesses; do
  case $name in
    json) targets+=(JSON) ;;
    *) targets+=("$name") ;;
  esac
done
library_log="$out/APNs.build.log"
if ! build_library >"$library_log" 2>&1; then
  echo "the fuzzed library (module APNs) did not build:" >&2
  cat "$library_log" >&2
  exit 1
fi
build_job() {
  build "$1" >"$out/$1.build.log" 2>&1
  echo $? >"$out/$1.build.status"
}
# Runs `job` for each argument, at most two at a time (the machines this project runs on have
# two cores), and returns when all have ended; each job writes its own result file.
two_at_a_time() { # job argument...
  local job=$1 busy=0 item
  shift
  for item in "$@"; do
    if [ "$busy" -ge 2 ]; then
      wait -n || true
      busy=$((busy - 1))
    fi
    "$job" "$item" &
    busy=$((busy + 1))
  done
  wait
}
rm -f "$out"/*.build.status
two_at_a_time build_job "${targets[@]}"

# libFuzzer runs one input at a time on one core: the harnesses run two at a time too, each
# printing its line once all have ended, in the order they were named.
run_job() {
  local name=$1 target=$1 start status seconds done_runs result log
  [ "$name" = json ] && target=JSON
  if [ "$(cat "$out/$target.build.status" 2>/dev/null)" != 0 ] || [ ! -x "$out/$target" ]; then
    printf '%-12s %10s %8s %s\n' "$name" - - "BUILD FAILED" >"$out/$name.result"
    cat "$out/$target.build.log" >>"$out/$name.result"
    return 1
  fi
  start=$(date +%s)
  log="$out/$name.log"
  ASAN_OPTIONS=detect_leaks=1 "$out/$target" -runs="$runs" -max_len=4096 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$out/artifacts/$name-" >"$log" 2>&1
  status=$?
  seconds=$(( $(date +%s) - start ))
  done_runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo 0)
  if [ $status -eq 0 ]; then result="0 crashes, 0 leaks"; else result="FAILED (see $log)"; fi
  printf '%-12s %10s %8s %s\n' "$name" "${done_runs:-0}" "$seconds" "$result" >"$out/$name.result"
  return $status
}
rm -f "$out"/*.result
# shellcheck disable=SC2086 # the harness names are words
two_at_a_time run_job $harnesses

failed=0
printf '%-12s %10s %8s %s\n' harness inputs seconds result
for name in $harnesses; do
  cat "$out/$name.result"
  grep -q "0 crashes, 0 leaks" "$out/$name.result" || failed=1
done
exit $failed
