#!/usr/bin/env bash
# ptz.sh - the README's two commands.
#   ./ptz.sh demo   install what is missing, build, record real workloads (C and Python), report, export
#   ./ptz.sh test   install what is missing, build, run every test suite
# Extra arguments after 'test' go to `meson test` (e.g. --suite unit).
set -euo pipefail
cd "$(dirname "$0")"
BUILD=${PTZ_BUILD_DIR:-build}

# PTZ_MESON_ARGS: extra `meson setup` options (CI adds -Dwerror=true).
# Quiet when it works; when meson or ninja fails, the end of their output
# (they print errors, compiler diagnostics included, on stdout) and the log.
configure() {
	./setup.sh
	local log re=()
	log=$(mktemp "${TMPDIR:-/tmp}/ptz-build.XXXXXX")
	[ -f "$BUILD/build.ninja" ] && re=(--reconfigure)
	# shellcheck disable=SC2086 # PTZ_MESON_ARGS are words by design
	if ! { meson setup "${re[@]}" "$BUILD" ${PTZ_MESON_ARGS:-} && ninja -C "$BUILD"; } >"$log" 2>&1; then
		tail -n 60 "$log" >&2
		echo "ptz.sh: configuring or building $BUILD failed (whole log: $log)" >&2
		exit 1
	fi
	rm -f "$log"
}

# Prints "N passed, N failed, N skipped" from a build dir's meson test log.
summary() {
	python3 - "$1/meson-logs/testlog.json" <<'PY'
import json, sys
p = f = s = 0
for line in open(sys.argv[1]):
    r = json.loads(line)["result"]
    if r in ("OK", "EXPECTEDFAIL"): p += 1
    elif r == "SKIP": s += 1
    else: f += 1
print(f"{p} passed, {f} failed, {s} skipped")
PY
}

case "${1:-}" in
test)
	shift
	configure
	rc=0
	rm -f "$BUILD/meson-logs/testlog.json" # the summary counts this run's results only
	meson test -C "$BUILD" --print-errorlogs --num-processes 2 "$@" || rc=$?
	summary "$BUILD"
	exit $rc
	;;
demo)
	configure
	out=${PTZ_DEMO_DIR:-$BUILD/demo}
	mkdir -p "$out"
	echo "== $BUILD/cli/ptanalyze peaks --json $out/machine.json   (this machine's roofs, for suggest)"
	"$BUILD/cli/ptanalyze" peaks --json "$out/machine.json"
	echo
	for ex in led_optimizer compress_corpus; do
		[ -x "$BUILD/examples/$ex" ] || { echo "ptz.sh: $ex was not built" >&2; continue; }
		echo "== $ex: recording $out/$ex.ptz"
		"$BUILD/examples/$ex" --trace "$out/$ex.ptz"
		echo
		echo "== $BUILD/cli/ptanalyze $out/$ex.ptz --report --bottlenecks 5 --csv $out/$ex.csv --json $out/$ex.json --html $out/$ex.html --peaks $out/machine.json"
		"$BUILD/cli/ptanalyze" "$out/$ex.ptz" --report --bottlenecks 5 --no-progress \
			--csv "$out/$ex.csv" --json "$out/$ex.json" --html "$out/$ex.html" --peaks "$out/machine.json"
		echo "   report page (charts, suggestions, call tree; opens offline): $out/$ex.html"
		echo "== $BUILD/cli/ptanalyze suggest $out/$ex.ptz --peaks $out/machine.json --top 6"
		"$BUILD/cli/ptanalyze" suggest "$out/$ex.ptz" --peaks "$out/machine.json" --top 6 --no-progress
		echo "== $BUILD/cli/ptanalyze export --perfetto $out/$ex.pftrace --chrome $out/$ex.chrome.json $out/$ex.ptz"
		"$BUILD/cli/ptanalyze" export --perfetto "$out/$ex.pftrace" --chrome "$out/$ex.chrome.json" \
			--no-progress "$out/$ex.ptz"
		echo "   open $out/$ex.pftrace at https://ui.perfetto.dev, or $out/$ex.chrome.json in speedscope"
		echo
	done
	# The LED optimizer in Python (python/, numpy): its own log() report,
	# then ptanalyze's, with the interpreter meson built the ptz module for
	# ($BUILD/python/interpreter, absent when the module is not built).
	py=$(cat "$BUILD/python/interpreter" 2>/dev/null || true)
	if [ -n "$py" ] && [ -x "$py" ]; then
		echo "== examples/python/led_optimizer.py: recording $out/led_optimizer_py.ptz (log() below)"
		PYTHONPATH="$BUILD/python" "$py" examples/python/led_optimizer.py --trace "$out/led_optimizer_py.ptz"
		echo
		echo "== $BUILD/cli/ptanalyze $out/led_optimizer_py.ptz --report"
		"$BUILD/cli/ptanalyze" "$out/led_optimizer_py.ptz" --report --no-progress
		echo
	fi
	;;
*)
	echo "usage: $0 test [meson test args...] | demo" >&2
	exit 2
	;;
esac
