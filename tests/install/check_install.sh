#!/usr/bin/env bash
# tests/install/check_install.sh BUILD_DIR SOURCE_DIR - what `meson install`
# ships works for a user who follows the README: a real `meson install -C
# BUILD_DIR` into the configured prefix (the default /usr/local) and
# `ldconfig`, then plain `pkg-config` (no PKG_CONFIG_PATH) finds ptz.pc and
# a program built with `cc app.c $(pkg-config --cflags --libs ptz)` (no
# rpath) starts and records a trace that the installed ptanalyze (on PATH)
# reads; the same with `pkg-config --static` and libptz.a; libptz.so exports
# exactly the public API (tests/install/exported-symbols.txt).
#
# It installs for real, so it needs root (as CI runs it): otherwise it says
# so and exits 77 (SKIP). What it installed stays installed, as after the
# README's commands; the build tree's own tests never use it (their RUNPATH
# names the build directory). Output: TAP lines, exit status 0, 1 or 77.
set -u
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
work=$(mktemp -d) n=0 failed=0
trap 'rm -rf "$work"' EXIT
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=1; echo "not ok $n - $1"; }
skip() {
	echo "1..0 # SKIP $1"
	exit 77
}

[ "$(id -u)" -eq 0 ] || skip "not root: this test runs a real 'meson install' into the default prefix (run as root, as CI does)"
opt() { meson introspect "$build" --buildoptions | python3 -c '
import json, sys
print([o["value"] for o in json.load(sys.stdin) if o["name"] == sys.argv[1]][0])' "$1"; }
prefix=$(opt prefix) libdir=$(opt libdir)
case $libdir in /*) ;; *) libdir=$prefix/$libdir ;; esac
case $prefix in
/usr/local | /usr) ;;
*) skip "prefix is $prefix, not a default one (/usr/local): pkg-config and the loader do not look there" ;;
esac
unset PKG_CONFIG_PATH PKG_CONFIG_LIBDIR PKG_CONFIG_SYSROOT_DIR LD_LIBRARY_PATH

# one install at a time, whichever build directory runs it (tests/readme too)
exec 9>/tmp/ptz-install-test.lock
flock 9
if meson install -C "$build" --no-rebuild >"$work/install.log" 2>&1 && ldconfig; then
	ok "meson install -C build && ldconfig (into $prefix)"
else
	not_ok "meson install -C build && ldconfig"
	sed 's/^/# /' "$work/install.log" | tail -20
fi
# the loader and pkg-config must find what was just installed, where meson put it
pcdir=$(pkg-config --variable=pcfiledir ptz 2>/dev/null)
if [ "$pcdir" = "$libdir/pkgconfig" ]; then
	ok "plain pkg-config finds ptz.pc in $pcdir"
else
	not_ok "plain pkg-config finds ptz.pc in '$pcdir', not $libdir/pkgconfig (its search path: $(pkg-config --variable pc_path pkg-config))"
fi
if ldconfig -p | grep -qF "$libdir/libptz.so.1"; then
	ok "ld.so.cache holds $libdir/libptz.so.1"
else
	not_ok "ld.so.cache lacks $libdir/libptz.so.1 (is $libdir in /etc/ld.so.conf.d?)"
fi
cflags=$(pkg-config --cflags ptz) libs=$(pkg-config --libs ptz)
if cc -Wall -Wextra -Werror "$src/tests/install/app.c" $cflags $libs -o "$work/app-shared" &&
	! readelf -d "$work/app-shared" | grep -qE 'RPATH|RUNPATH' && "$work/app-shared" "$work/shared.ptz"; then
	ok "shared: cc app.c \$(pkg-config --cflags --libs ptz), no rpath, runs"
else
	not_ok "shared: cc app.c \$(pkg-config --cflags --libs ptz), no rpath, runs"
fi
if ldd "$work/app-shared" | grep -qF "$libdir/libptz.so.1"; then
	ok "the program loads $libdir/libptz.so.1"
else
	not_ok "the program loads $(ldd "$work/app-shared" | grep libptz)"
fi
# static: the archive itself, with the libraries pkg-config --static lists
static_libs=$(pkg-config --static --libs ptz | sed 's/-lptz//')
if cc "$src/tests/install/app.c" $cflags "$libdir/libptz.a" $static_libs -o "$work/app-static" &&
	! ldd "$work/app-static" | grep -q libptz && "$work/app-static" "$work/static.ptz"; then
	ok "static: libptz.a + pkg-config --static, runs"
else
	not_ok "static: libptz.a + pkg-config --static, runs"
fi
ana=$(command -v ptanalyze)
if [ "$ana" = "$prefix/bin/ptanalyze" ]; then
	ok "ptanalyze on PATH is $ana"
else
	not_ok "ptanalyze on PATH is '$ana', not $prefix/bin/ptanalyze"
fi
for t in shared static; do
	if [ -f "$work/$t.ptz" ] && ptanalyze "$work/$t.ptz" --json - --no-progress | python3 -c '
import json, sys
d = json.load(sys.stdin)
c = {r["name"]: r["count"] for r in d["flat"]}
sys.exit(0 if c.get("outer") == 1000 and c.get("inner") == 1000 and d["trace"]["lost_records"] == 0 else 1)'; then
		ok "installed ptanalyze reads the $t program's trace: 1000 outer, 1000 inner"
	else
		not_ok "installed ptanalyze reads the $t program's trace"
	fi
done
if diff <(nm -D --defined-only "$libdir/libptz.so" | awk '{print $3}' | sort) "$src/tests/install/exported-symbols.txt"; then
	ok "libptz.so exports exactly tests/install/exported-symbols.txt"
else
	not_ok "libptz.so exports exactly tests/install/exported-symbols.txt (diff above)"
fi
# libptanalyze.so (ptz/analysis.h): ptz-analysis.pc, exactly the pt_analysis_* API (the analyzer and its
# reader linked in hidden), and a program built with plain pkg-config analyzes the shared program's trace
if diff <(nm -D --defined-only "$libdir/libptanalyze.so" | awk '{print $3}' | sort) \
	<(grep '^PT_API' "$src/include/ptz/analysis.h" | grep -o 'pt_analysis_[a-z_]*(' | tr -d '(' | sort); then
	ok "libptanalyze.so exports exactly the functions of ptz/analysis.h"
else
	not_ok "libptanalyze.so exports exactly the functions of ptz/analysis.h (diff above)"
fi
cat >"$work/stats.c" <<'C'
#include <ptz/analysis.h>
#include <stdio.h>
int main(int argc, char **argv)
{
	pt_analysis *a;
	if (argc < 2 || pt_analysis_open(argv[1], &a) < 0)
		return 1;
	struct pt_analysis_row r;
	for (size_t i = 0; i < pt_analysis_rows(a, PT_ANALYSIS_FLAT); i++)
		if (pt_analysis_row(a, PT_ANALYSIS_FLAT, i, &r, sizeof(r)) == 0)
			printf("%s %llu\n", r.name, (unsigned long long)r.count);
	pt_analysis_close(a);
	return 0;
}
C
if cc -Wall -Wextra -Werror "$work/stats.c" $(pkg-config --cflags --libs ptz-analysis) -o "$work/stats" &&
	! readelf -d "$work/stats" | grep -qE 'RPATH|RUNPATH' &&
	[ "$("$work/stats" "$work/shared.ptz" | sort | tr '\n' ' ')" = "inner 1000 outer 1000 " ]; then
	ok "cc stats.c \$(pkg-config --cflags --libs ptz-analysis), no rpath: outer 1000, inner 1000"
else
	not_ok "cc stats.c \$(pkg-config --cflags --libs ptz-analysis): $("$work/stats" "$work/shared.ptz" 2>&1 | head -3)"
fi
# CUDA is loaded at run time (recorder/rec_gpu.c), never linked: the same
# libptz runs where there is no driver or toolkit
needed=$(LC_ALL=C readelf -d "$libdir/libptz.so" | grep NEEDED)
if [ -n "$needed" ] && ! grep -qiE 'libcuda|libcudart|libnvToolsExt|libcupti' <<<"$needed"; then
	ok "libptz.so links no CUDA library ($(grep -o '\[[^]]*\]' <<<"$needed" | tr -d '[]' | tr '\n' ' '))"
else
	not_ok "libptz.so must not link CUDA: $needed"
fi
echo "1..$n"
exit $failed
