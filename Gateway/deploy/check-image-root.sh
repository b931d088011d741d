#!/usr/bin/env bash
# What can be checked of Gateway/deploy/Dockerfile's running image on a machine with no container
# engine: its runtime stage played on a Debian root made with debootstrap (the same release as
# the image's base), with chroot in place of the engine. As root:
#
#   debootstrap --variant=minbase bookworm /tmp/image-root http://deb.debian.org/debian
#   swift build -c release --static-swift-stdlib --package-path Gateway --product apns-gateway
#   bash Gateway/deploy/check-image-root.sh /tmp/image-root "$(swift build -c release --package-path Gateway --show-bin-path)/apns-gateway"
#
# It runs the runtime stage's RUN as written in the Dockerfile (packages, user, the volume's
# folder), copies the binary where COPY puts it, then starts it as the image would: as USER, in
# WORKDIR, with the Dockerfile's ENV and CMD, against `apns mock-server` on this machine. Checked:
# every shared library the binary needs is in the image; it serves as the unprivileged user with
# the SQLite queue on the volume's folder; the HEALTHCHECK command passes; a notification is
# accepted and sent; SIGTERM stops it with status 0. Not checked (it needs the engine): the build
# stage in Swift's image, the layers, the volume and port mapping, the engine's own health-check
# loop.
set -euo pipefail
root_dir=${1:?a Debian root made with debootstrap}
binary=${2:?the gateway built with --static-swift-stdlib}
repository=$(cd "$(dirname "$0")/../.." && pwd)
dockerfile="$repository/Gateway/deploy/Dockerfile"
[ "$(id -u)" -eq 0 ] || { echo "run as root (chroot)" >&2; exit 2; }

# The Dockerfile's runtime stage: its instructions, continuation lines joined.
stage=$(awk '/^FROM debian:/ { on = 1; next } on' "$dockerfile" | sed -e ':a' -e '/\\$/N; s/\\\n//; ta' | grep -v '^#')
instruction() { echo "$stage" | awk -v name="$1" '$1 == name { $1 = ""; sub(/^ /, ""); print }'; }
run=$(instruction RUN)
user=$(instruction USER)
workdir=$(instruction WORKDIR)
environment=$(instruction ENV)
health=$(instruction HEALTHCHECK | sed -E 's/.*CMD //')
command=$(instruction CMD | tr -d '[]",')

mount_points() { for point in proc dev; do mountpoint -q "$root_dir/$point" || mount --bind "/$point" "$root_dir/$point"; done; }
unmount_points() { for point in proc dev; do umount "$root_dir/$point" 2>/dev/null || true; done; }
work=$(mktemp -d)
pids=()
finish() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  unmount_points
  rm -rf "$work"
}
trap finish EXIT
mount_points
cp /etc/resolv.conf "$root_dir/etc/resolv.conf"

echo "== RUN (as the Dockerfile writes it)"
id -u 10001 >/dev/null 2>&1 || true
chroot "$root_dir" id apns-gateway >/dev/null 2>&1 || chroot "$root_dir" sh -ec "$run" >"$work/run.log" 2>&1 || {
  cat "$work/run.log" >&2
  exit 1
}
install -D -m 0755 "$binary" "$root_dir/usr/local/bin/apns-gateway"
missing=$(chroot "$root_dir" ldd /usr/local/bin/apns-gateway | grep 'not found' || true)
[ -z "$missing" ] || { echo "libraries missing from the image: $missing" >&2; exit 1; }
echo "every library the binary loads is in the image: $(chroot "$root_dir" ldd /usr/local/bin/apns-gateway | awk '{ print $1 }' | tr '\n' ' ')"

echo "== the gateway as the image starts it (USER $user, WORKDIR $workdir, CMD $command)"
"$repository/.build/debug/apns" mock-server --dir "$work" --allow-frequent-token-updates >"$work/mock.out" &
pids+=($!)
for _ in $(seq 100); do grep -q '^client-cert' "$work/mock.out" 2>/dev/null && break; sleep 0.1; done
listening=$(awk '/^listening/ { print $2 }' "$work/mock.out")
read -r _ key_file _ key_id _ team_id < <(grep '^key-file' "$work/mock.out")
mkdir -p "$root_dir/run/check"
cp "$key_file" "$root_dir/run/check/key.p8"
cp "$work/ca.pem" "$root_dir/run/check/ca.pem"
chmod 0644 "$root_dir/run/check/"*
# The image's ENV, the credentials as a deployment would give them (by environment).
# shellcheck disable=SC2086
chroot --userspec="$user" "$root_dir" sh -c "cd $workdir && exec env -i PATH=/usr/local/bin:/usr/bin:/bin $environment \
  APNS_GATEWAY_KEY_FILE=/run/check/key.p8 APNS_GATEWAY_KEY_ID=$key_id APNS_GATEWAY_TEAM_ID=$team_id \
  APNS_GATEWAY_APNS_HOST=$listening APNS_GATEWAY_CA_FILE=/run/check/ca.pem /usr/local/bin/apns-gateway $command" \
  >"$work/gateway.out" 2>"$work/gateway.log" &
gateway=$!
pids+=($gateway)
for _ in $(seq 100); do grep -q '^listening' "$work/gateway.out" 2>/dev/null && break; sleep 0.1; done
grep -q '^listening' "$work/gateway.out" || { cat "$work/gateway.log" >&2; echo "it did not start" >&2; exit 1; }
echo "$(cat "$work/gateway.out")"
owner=$(stat -c '%u:%g %a' "$root_dir$workdir/queue.sqlite")
echo "the queue on the volume's folder: $workdir/queue.sqlite ($owner)"
[[ "$owner" == 10001:10001* ]] || { echo "the queue is not the unprivileged user's" >&2; exit 1; }
[ "$(chroot "$root_dir" id -u apns-gateway):$(chroot "$root_dir" id -g apns-gateway)" = 10001:10001 ] \
  || { echo "the image's user is not 10001:10001, which USER names" >&2; exit 1; }
[ "$(stat -c '%u:%g' "$root_dir$workdir")" = 10001:10001 ] || { echo "the volume's folder is not the user's" >&2; exit 1; }

echo "== HEALTHCHECK: $health"
chroot --userspec="$user" "$root_dir" sh -c "$health" || { echo "the health check failed" >&2; exit 1; }
echo "passed"

echo "== a notification through it"
key=$(chroot --userspec="$user" "$root_dir" sh -c "cd $workdir && env -i $environment /usr/local/bin/apns-gateway add-key --name check --app com.example.app --rate 10" 2>/dev/null)
token=00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0
answer=$(curl -s -X POST "http://127.0.0.1:8080/v1/notifications?wait=5" -H "authorization: Bearer $key" \
  -d '{"push-type":"alert","bundle-id":"com.example.app","alert":"From the image","devices":["'$token'"]}')
echo "$answer" | grep -q '"state":"accepted"' || { echo "not sent: $answer" >&2; cat "$work/gateway.log" >&2; exit 1; }
echo "accepted by APNs (the mock): ${answer:0:120}…"
head -1 "$work/gateway.log" | python3 -c 'import json, sys; json.loads(sys.stdin.read())' \
  || { echo "the log is not JSON (APNS_GATEWAY_LOG_FORMAT)" >&2; exit 1; }

echo "== STOPSIGNAL SIGTERM"
kill -TERM "$gateway"
status=0
wait "$gateway" || status=$?
[ "$status" = 0 ] || { echo "it stopped with status $status" >&2; exit 1; }
echo "stopped with status 0"
echo "check-image-root: ok"
