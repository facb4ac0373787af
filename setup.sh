#!/bin/sh
# setup.sh - install what ptz needs to build and test on Debian 12.
# As root it runs apt-get; otherwise it prints the exact command and stops.
# It never installs CUDA (used where installed, through CUDA_HOME).
set -eu
# dpkg-dev: meson picks Debian's multiarch libdir (lib/x86_64-linux-gnu, where
# pkg-config and ld.so look) only when dpkg-architecture is on PATH; without
# it `meson install` puts libptz and ptz.pc in lib64, where neither looks.
PKGS="meson ninja-build pkg-config dpkg-dev gcc g++ libzstd-dev liburcu-dev libxxhash-dev libcmocka-dev
libjansson-dev libjs-chart.js libprotobuf-c-dev protobuf-c-compiler protobuf-compiler libopenblas-dev
python3-numpy python3-dev python3-protobuf python3-zstandard python3-xxhash chromium-headless-shell valgrind"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# npm (for the speedscope browser check) only if none is on PATH: a node
# installed outside Debian may conflict with Debian's npm package
command -v npm >/dev/null 2>&1 || missing="$missing npm"
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "setup.sh: missing packages:$missing" >&2
	echo "run: sudo apt-get update && sudo apt-get install -y$missing" >&2
	exit 1
fi
echo "setup.sh: installing$missing" >&2
echo "setup.sh: apt-get update and install (on a fresh system a few hundred MB, several minutes; output hidden)" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
apt-get install -y -q --no-install-recommends $missing >/dev/null
