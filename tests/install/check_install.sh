#!/usr/bin/env bash
# tests/install/check_install.sh BUILD_DIR SOURCE_DIR - what `meson install`
# ships works for a user: a program built with `pkg-config --cflags --libs
# ptz` (shared) and `pkg-config --static` (libptz.a) records a trace that
# the installed ptanalyze reads; libptz.so exports exactly the public API
# (tests/install/exported-symbols.txt). TAP output.
set -u
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
dest=$(mktemp -d) n=0 failed=0
trap 'rm -rf "$dest"' EXIT
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=1; echo "not ok $n - $1"; }

meson install -C "$build" --destdir "$dest" --no-rebuild >/dev/null 2>&1 && ok "meson install" || not_ok "meson install"
pc=$(find "$dest" -name ptz.pc | head -1)
lib=$(dirname "$(dirname "$pc")")
export PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR=$dest
cflags=$(pkg-config --cflags ptz) libs=$(pkg-config --libs ptz)
if cc -Wall -Wextra -Werror "$src/tests/install/app.c" $cflags $libs -Wl,-rpath,"$lib" -o "$dest/app-shared" &&
	"$dest/app-shared" "$dest/shared.ptz"; then
	ok "shared: cc app.c \$(pkg-config --cflags --libs ptz), runs"
else
	not_ok "shared: cc app.c \$(pkg-config --cflags --libs ptz), runs"
fi
# static: the archive itself, with the libraries pkg-config --static lists
static_libs=$(pkg-config --static --libs ptz | sed 's/-lptz//')
if cc "$src/tests/install/app.c" $cflags "$lib/libptz.a" $static_libs -o "$dest/app-static" &&
	! ldd "$dest/app-static" | grep -q libptz && "$dest/app-static" "$dest/static.ptz"; then
	ok "static: libptz.a + pkg-config --static, runs"
else
	not_ok "static: libptz.a + pkg-config --static, runs"
fi
ana=$(find "$dest" -name ptanalyze -type f | head -1)
for t in shared static; do
	if [ -f "$dest/$t.ptz" ] && "$ana" "$dest/$t.ptz" --json - --no-progress | python3 -c '
import json, sys
d = json.load(sys.stdin)
c = {r["name"]: r["count"] for r in d["flat"]}
sys.exit(0 if c.get("outer") == 1000 and c.get("inner") == 1000 and d["trace"]["lost_records"] == 0 else 1)'; then
		ok "installed ptanalyze reads the $t program's trace: 1000 outer, 1000 inner"
	else
		not_ok "installed ptanalyze reads the $t program's trace"
	fi
done
if diff <(nm -D --defined-only "$lib/libptz.so" | awk '{print $3}' | sort) "$src/tests/install/exported-symbols.txt"; then
	ok "libptz.so exports exactly tests/install/exported-symbols.txt"
else
	not_ok "libptz.so exports exactly tests/install/exported-symbols.txt (diff above)"
fi
# CUDA is loaded at run time (recorder/rec_gpu.c), never linked: the same
# libptz runs where there is no driver or toolkit
needed=$(LC_ALL=C readelf -d "$lib/libptz.so" | grep NEEDED)
if [ -n "$needed" ] && ! grep -qiE 'libcuda|libcudart|libnvToolsExt|libcupti' <<<"$needed"; then
	ok "libptz.so links no CUDA library ($(grep -o '\[[^]]*\]' <<<"$needed" | tr -d '[]' | tr '\n' ' '))"
else
	not_ok "libptz.so must not link CUDA: $needed"
fi
echo "1..$n"
exit $failed
