#!/usr/bin/env bash
# Builds the libFuzzer harnesses (swiftc -sanitize=fuzzer,address) and runs each for RUNS inputs.
#
#   bash Fuzz/run.sh              # 1,000,000 inputs each (minutes)
#   bash Fuzz/run.sh 20000        # a short run (CI)
#   bash Fuzz/run.sh 20000 mock   # only the named harnesses
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
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-1000000}
harnesses=${2:-responses json tokens credentials mock options}
out=.build-fuzz
mkdir -p "$out/artifacts"
flags=(-sanitize=fuzzer,address -parse-as-library -O -g -swift-version 6 -package-name swift_apns)
core=$(find Sources/APNsCore -name '*.swift' | sort)
# The credentials harness needs only the credential loaders and the DSL (Sources/APNsCore), which
# import nothing but Foundation and CCrypto (the rest of APNs imports swift-log, swift-metrics,
# tracing and service-lifecycle, which a swiftc-only build does not have).
apns=$(find Sources/APNs/Credentials -name '*.swift' | sort)
# The mock harness needs only the validator and what it reads (the rest of the mock imports SwiftNIO
# and swift-crypto): it is compiled into a module named like the mock's, with its own context.
mock=(Sources/APNsMockServer/{ValidationContext,RequestValidator,PayloadShape,RecordedRequest}.swift)
options=(Sources/APNs/RetryPolicy.swift Sources/APNs/Connectors/{TransportConfiguration,Proxy}.swift
  Sources/APNs/Transport/{CircuitBreaker,Duration+Transport}.swift)
maps=(-Xcc -fmodule-map-file=Sources/CCurl/module.modulemap -Xcc -fmodule-map-file=Sources/CCrypto/module.modulemap)
quiet() { grep -v -E "Cannot export local symbol|^$" || true; }

# Sources/APNsCore alone, as the module APNs it is part of: what the mock's validator imports.
core_module() {
  [ -f "$out/libAPNs.a" ] && [ "$out/libAPNs.a" -nt "$0" ] && [ -z "$(find Sources/APNsCore -newer "$out/libAPNs.a" -name '*.swift')" ] && return
  swiftc "${flags[@]}" -module-name APNs -emit-module -emit-module-path "$out/APNs.swiftmodule" \
    -emit-library -static -o "$out/libAPNs.a" $core 2>&1 | quiet
}

build() {
  local name=$1
  case $name in
    mock)
      core_module
      swiftc "${flags[@]}" -module-name APNsMockServer -I "$out" "${mock[@]}" Fuzz/Harnesses/FuzzInput.swift \
        Fuzz/Harnesses/MockRequests.swift -L "$out" -lAPNs -o "$out/$name" 2>&1 | quiet ;;
    credentials)
      # The harness is compiled into APNs to reach its internals.
      swiftc "${flags[@]}" -module-name APNs "${maps[@]}" $core $apns Fuzz/Harnesses/FuzzInput.swift \
        Fuzz/Harnesses/Credentials.swift -lcurl -lssl -lcrypto -o "$out/$name" 2>&1 | quiet ;;
    options)
      # The settings and what checks them, compiled into APNs to reach its internals; the rest of
      # the transport (libcurl, swift-log) is not needed.
      swiftc "${flags[@]}" -module-name APNs "${maps[@]}" $core $apns "${options[@]}" Fuzz/Harnesses/FuzzInput.swift \
        Fuzz/Harnesses/Options.swift -lcrypto -o "$out/$name" 2>&1 | quiet ;;
    *)
      swiftc "${flags[@]}" -module-name "Fuzz_$name" $core Fuzz/Harnesses/FuzzInput.swift "Fuzz/Harnesses/$(tr a-z A-Z <<< "${name:0:1}")${name:1}.swift" \
        -o "$out/$name" 2>&1 | quiet ;;
  esac
}

# Every harness is one optimised whole-module compile, which keeps about one core busy: they are
# built two at a time first (the mock's after the APNsCore module it links), then run one by one.
targets=()
core_pid=""
for name in $harnesses; do
  case $name in
    json) targets+=(JSON) ;;
    mock)
      core_module &
      core_pid=$!
      ;;
    *) targets+=("$name") ;;
  esac
done
[ -n "$core_pid" ] && targets+=(mock)
build_job() {
  build "$1" >"$out/$1.build.log" 2>&1
  echo $? >"$out/$1.build.status"
}
busy=0
[ -n "$core_pid" ] && busy=1
for target in "${targets[@]}"; do
  if [ "$busy" -ge 2 ]; then
    wait -n
    busy=$((busy - 1))
  fi
  [ "$target" = mock ] && [ -n "$core_pid" ] && wait "$core_pid"
  rm -f "$out/$target.build.status"
  build_job "$target" &
  busy=$((busy + 1))
done
wait

failed=0
printf '%-12s %10s %8s %s\n' harness inputs seconds result
for name in $harnesses; do
  target=$name
  [ "$name" = json ] && target=JSON
  if [ "$(cat "$out/$target.build.status" 2>/dev/null)" != 0 ] || [ ! -x "$out/$target" ]; then
    printf '%-12s %10s %8s %s\n' "$name" - - "BUILD FAILED"
    cat "$out/$target.build.log"
    failed=1
    continue
  fi
  start=$(date +%s)
  log="$out/$name.log"
  ASAN_OPTIONS=detect_leaks=1 "$out/$target" -runs="$runs" -max_len=4096 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$out/artifacts/$name-" >"$log" 2>&1
  status=$?
  seconds=$(( $(date +%s) - start ))
  done_runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo 0)
  if [ $status -eq 0 ]; then result="0 crashes, 0 leaks"; else result="FAILED (see $log)"; failed=1; fi
  printf '%-12s %10s %8s %s\n' "$name" "${done_runs:-0}" "$seconds" "$result"
done
exit $failed
