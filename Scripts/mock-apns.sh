# Shared by the run-with-mock.sh scripts (Gateway/, Examples/PushService/): source it, then
#
#   build_quietly LOG PACKAGE swift-build-arguments…   # swift build of one of the repository's
#                                              # packages (Scripts/package.sh: in the repository's
#                                              # .build); its output only if it fails
#   bin=$(bin_path)                            # where those builds put their programs
#                                              # (APNS_E2E_BIN=FOLDER: built before; neither builds)
#   start_mock_apns APNS [mock-server flags…]  # `apns mock-server` in $work; sets $listening,
#                                              # $key_file, $key_id and $team_id ($work/ca.pem is its CA)
#   address=$(wait_for_listening FILE)         # the address a process printed as "listening ADDR"
#
# Sourcing it makes $work (a temporary folder) and a trap that stops every process in $pids and
# removes $work on exit.
work=$(mktemp -d)
pids=()
stop_and_clean_up() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap stop_and_clean_up EXIT

build_quietly() {
  # Runs that go side by side are built before (no two SwiftPM builds at once in one folder), and
  # say where with APNS_E2E_BIN.
  [ -n "${APNS_E2E_BIN:-}" ] && return 0
  local log="${TMPDIR:-/tmp}/$1" package=$2
  shift 2
  bash "$root/Scripts/package.sh" "$package" build "$@" >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
}

bin_path() { if [ -n "${APNS_E2E_BIN:-}" ]; then echo "$APNS_E2E_BIN"; else bash "$root/Scripts/package.sh" . build --show-bin-path; fi; }

start_mock_apns() {
  local apns=$1
  shift
  # The mock server prints its address and the credentials it generated, one per line.
  "$apns" mock-server --dir "$work" "$@" >"$work/mock.out" &
  pids+=($!)
  for _ in $(seq 100); do grep -q '^client-cert' "$work/mock.out" 2>/dev/null && break; sleep 0.1; done
  listening=$(awk '/^listening/ {print $2}' "$work/mock.out")
  read -r _ key_file _ key_id _ team_id < <(grep '^key-file' "$work/mock.out")
  echo "mock APNs on $listening"
}

wait_for_listening() {
  for _ in $(seq 100); do grep -q '^listening' "$1" 2>/dev/null && break; sleep 0.1; done
  awk '/^listening/ {print $2}' "$1"
}
