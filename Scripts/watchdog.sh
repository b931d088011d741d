#!/usr/bin/env bash
# Runs a test command and, if it is still running after a limit, shows where it hangs and ends it:
#
#   bash Scripts/watchdog.sh COMMAND [ARGUMENTS…]
#
# A test that waits for something that never comes (a blocking wait, a continuation nobody
# resumes) does not fail: it holds its run until CI's own limit ends the whole run, with nothing
# said about where it waited. Here, after APNS_TEST_WATCHDOG seconds (1,500 unless set; a test
# run here takes minutes, a build inside it at most about ten), the watchdog prints the process
# tree and, with gdb, every thread's stack in each test binary (`*.xctest`) and each process they
# started, then ends the command's processes and exits 124, as `timeout` does.
#
# The command runs in a process group of its own so that all of it can be ended together; an
# interrupt or a termination of this script is passed on to that group.
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: bash Scripts/watchdog.sh COMMAND [ARGUMENTS…]" >&2; exit 2; }
limit=${APNS_TEST_WATCHDOG:-1500}
set -m  # the background command leads a process group of its own
"$@" &
command_pid=$!
set +m
trap 'kill -TERM -- "-$command_pid" 2>/dev/null' INT TERM
started=$SECONDS
while kill -0 "$command_pid" 2>/dev/null; do
  if [ $((SECONDS - started)) -ge "$limit" ]; then
    {
      echo "watchdog.sh: still running after $limit s: $*"
      echo "watchdog.sh: the processes, then every thread's stack in the test binaries and their children"
      ps -o pid,ppid,etime,args --forest -p "$(pgrep -d, -g "$command_pid")" || true
      tests=$(pgrep -g "$command_pid" -f '\.xctest' || true)
      for pid in $tests $(for test in $tests; do pgrep -P "$test"; done); do
        echo "--- $pid: $(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null)"
        if command -v gdb > /dev/null; then
          gdb -p "$pid" -batch -ex 'thread apply all bt' 2>/dev/null | grep -E '^(Thread|#)' || true
        fi
      done
    } >&2
    kill -TERM -- "-$command_pid" 2>/dev/null
    sleep 5
    kill -KILL -- "-$command_pid" 2>/dev/null
    wait "$command_pid" 2>/dev/null
    exit 124
  fi
  sleep 1
done
wait "$command_pid"
