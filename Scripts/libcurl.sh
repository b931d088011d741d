#!/usr/bin/env bash
# Prints the folder of a private copy of another libcurl, for running the test suite against it
# beside the system's (Debian 12's 7.88.1):
#
#   LD_LIBRARY_PATH=$(bash Scripts/libcurl.sh 8) swift test --skip-build
#   LD_LIBRARY_PATH=$(bash Scripts/libcurl.sh 7.81) swift test --skip-build
#
#   8     Debian bookworm-backports' libcurl4 (8.14.1 when this was written): the newest.
#   7.81  Ubuntu 22.04's libcurl4 (7.81.0-1, its release), pinned by SHA-256: the oldest our users
#         run (the library's minimum is 7.80). It needs libssh.so.4, which Debian 12 has in a
#         package of its own (libssh-4), copied beside it.
#
# Nothing is installed: packages are downloaded with a private apt configuration (its own sources
# list, lists and cache under .build-libcurl<version>/) or by URL, and unpacked there with dpkg -x.
# Their other libraries are Debian 12's. The system's libcurl and what
# Scripts/install-dependencies.sh installs are untouched. Linux (Debian or Ubuntu, amd64 for 7.81)
# only.
set -euo pipefail
cd "$(dirname "$0")/.."
which=${1:-}
case "$which" in
  8) suite=bookworm-backports ;;
  7.81)
    suite=bookworm
    ubuntu_deb=libcurl4_7.81.0-1_amd64.deb
    ubuntu_sha256=4d533aaa16ea8c977f61f483ef0634f21dd38e954e39324a975c88e28969144d
    [ "$(dpkg --print-architecture)" = amd64 ] || { echo "libcurl 7.81 is fetched for amd64 only" >&2; exit 1; }
    ;;
  *) echo "usage: bash Scripts/libcurl.sh 8|7.81" >&2; exit 2 ;;
esac
root="$PWD/.build-libcurl$which"
lib="$root/root/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)"
if [ ! -e "$lib/libcurl.so.4" ]; then
  mkdir -p "$root/apt/lists/partial" "$root/apt/cache/archives/partial" "$root/download"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $suite main" \
    >"$root/apt/sources.list"
  apt=(-o "Dir::Etc::SourceList=$root/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
    -o "Dir::State::Lists=$root/apt/lists" -o "Dir::Cache=$root/apt/cache" -o Debug::NoLocking=1
    -o APT::Sandbox::User=root)
  apt-get "${apt[@]}" -qq update >&2
  if [ "$which" = 8 ]; then
    (cd "$root/download" && apt-get "${apt[@]}" -qq download libcurl4/bookworm-backports >&2)
  else
    (cd "$root/download" && apt-get "${apt[@]}" -qq download libssh-4 >&2)
    curl -fsSL -o "$root/download/$ubuntu_deb" "http://archive.ubuntu.com/ubuntu/pool/main/c/curl/$ubuntu_deb"
    echo "$ubuntu_sha256  $root/download/$ubuntu_deb" | sha256sum --check --quiet - >&2
  fi
  for deb in "$root"/download/*.deb; do dpkg -x "$deb" "$root/root"; done
fi
# The copy must be the libcurl it claims to be, and load.
version=$(LD_LIBRARY_PATH="$lib" python3 -c 'import ctypes; c = ctypes.CDLL("libcurl.so.4"); c.curl_version.restype = ctypes.c_char_p; print(c.curl_version().decode().split()[0])')
case "$version" in
  "libcurl/$which".*) echo "using $version from $lib" >&2 ;;
  *) echo "expected libcurl $which in $lib, loaded $version" >&2; exit 1 ;;
esac
echo "$lib"
