#!/usr/bin/env bash
# Runs a test command and, if it is still running after a limit, shows where it hangs and ends it:
#
#   bash Scripts/watchdog.sh COMMAND [ARGUMENTS…]
#
# A test that waits for something that never comes (a blocking wait, a continuation nobody
# resumes) does not fail: it holds its run until CI's own limit ends the whole run, with nothing
# said about where it waited. Here, after APNS_TEST_WATCHDOG seconds (1,500 unless set; a test
# run here takes minutes), the watchdog prints the command's processes and, with gdb, every
# thread's stack in each test binary (`*.xctest`) and each process it started, then ends the
# command and everything it started, and exits 124, as `timeout` does.
#
# The command stays in the caller's process group, so an interrupt at a terminal reaches it as
# before; a termination of this script is passed on to it.
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: bash Scripts/watchdog.sh COMMAND [ARGUMENTS…]" >&2; exit 2; }
limit=${APNS_TEST_WATCHDOG:-1500}
# The processes below $1, children before their children.
descendants() {
  local child
  for child in $(pgrep -P "$1"); do
    echo "$child"
    descendants "$child"
  done
}
"$@" &
command_pid=$!
trap 'kill -TERM "$command_pid" $(descendants "$command_pid") 2>/dev/null' TERM
started=$SECONDS
while kill -0 "$command_pid" 2>/dev/null; do
  if [ $((SECONDS - started)) -ge "$limit" ]; then
    tree=$(descendants "$command_pid")
    {
      echo "watchdog.sh: still running after $limit s: $*"
      echo "watchdog.sh: the processes, then every thread's stack in the test binaries and their children"
      ps -o pid,ppid,etime,args -p "$(echo "$command_pid" $tree | tr ' ' ',')" || true
      tests=$(for pid in "$command_pid" $tree; do grep -q '\.xctest' "/proc/$pid/cmdline" 2>/dev/null && echo "$pid"; done)
      for pid in $tests $(for test in $tests; do descendants "$test"; done); do
        echo "--- $pid: $(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null)"
        if command -v gdb > /dev/null; then
          gdb -p "$pid" -batch -ex 'thread apply all bt' 2>/dev/null | grep -E '^(Thread|#)' || true
        fi
      done
    } >&2
    kill -TERM "$command_pid" $tree 2>/dev/null
    sleep 5
    kill -KILL "$command_pid" $(descendants "$command_pid") $tree 2>/dev/null
    wait "$command_pid" 2>/dev/null
    exit 124
  fi
  sleep 1
done
wait "$command_pid"
