#!/usr/bin/env bash
# Prints the folder of a private copy of libcurl 8 (Debian bookworm-backports' libcurl4, 8.14.1
# when this was written) for running the test suite against it beside the system's 7.88:
#
#   LD_LIBRARY_PATH=$(bash Scripts/libcurl8.sh) swift test --skip-build
#
# Nothing is installed: the package is downloaded with a private apt configuration (its own
# sources list, lists and cache under .build-libcurl8/) and unpacked there with dpkg -x. It loads
# on Debian 12 as is (its other libraries are Debian 12's). The system's libcurl and what
# Scripts/install-dependencies.sh installs are untouched. Linux (Debian or Ubuntu) only.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD/.build-libcurl8"
lib="$root/root/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)"
if [ ! -e "$lib/libcurl.so.4" ]; then
  mkdir -p "$root/apt/lists/partial" "$root/apt/cache/archives/partial" "$root/download"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm-backports main" \
    >"$root/apt/sources.list"
  apt=(-o "Dir::Etc::SourceList=$root/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
    -o "Dir::State::Lists=$root/apt/lists" -o "Dir::Cache=$root/apt/cache" -o Debug::NoLocking=1
    -o APT::Sandbox::User=root)
  apt-get "${apt[@]}" -qq update >&2
  (cd "$root/download" && apt-get "${apt[@]}" -qq download libcurl4/bookworm-backports >&2)
  dpkg -x "$root"/download/libcurl4_*.deb "$root/root"
fi
# The copy must be the libcurl 8 it claims to be, and load.
version=$(LD_LIBRARY_PATH="$lib" python3 -c 'import ctypes; c = ctypes.CDLL("libcurl.so.4"); c.curl_version.restype = ctypes.c_char_p; print(c.curl_version().decode().split()[0])')
case "$version" in
  libcurl/8.*) echo "using $version from $lib" >&2 ;;
  *) echo "expected libcurl 8 in $lib, loaded $version" >&2; exit 1 ;;
esac
echo "$lib"
