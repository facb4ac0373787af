#!/usr/bin/env bash
# scripts/gpu-checks.sh BUILD_DIR OUT_DIR - every check that needs a real
# CUDA GPU, in one run (CI has none; run it by hand where a GPU is).
#
# BUILD_DIR: a meson build configured with nvcc (-Dcuda=enabled), so that
# bench/gpu-check*, examples/led_optimizer_gpu and the examples-gpu test
# exist. PYTHON (default python3) runs the Python checks, AGREE_PYTHON
# (default PYTHON) the export check (it needs protobuf and protoc). The
# Python checks run when the ptz extension was built and torch
# and cupy import. OUT_DIR receives the traces and one log per step.
#
# Steps (each prints PASS/FAIL lines of its own; a step that cannot run
# says SKIP and why):
#   1. bench/gpu-check and gpu-check-static-cudart (bench/README.md), drift
#      runs skipped (--drift-s 0) unless GPU_CHECK_DRIFT_S is set;
#   2. examples/led_optimizer_gpu at its default size, trace kept;
#   3. bench/gpu_python_check.py (PyTorch and CuPy streams), traces kept;
#   4. tests/export/agree/check_agree.py with those real GPU traces added
#      (PTZ_AGREE_TRACES): report, CSV, JSON, Perfetto and Chrome count the
#      same sections and pair the same GPU launches and ranges;
#   5. -j 1 and -j N give byte-identical --json and text reports of each
#      real trace;
#   6. ptanalyze peaks --gpu (the device's roofs);
#   7. meson test: the gpu suite and examples-gpu.
# Exit 0 when no step failed, else 1.
set -u
if [ $# -ne 2 ]; then
	echo "usage: scripts/gpu-checks.sh BUILD_DIR OUT_DIR" >&2
	exit 2
fi
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd) || exit 2
out=$2
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 2
ana=$build/cli/ptanalyze
py=${PYTHON:-python3}
failed=()
traces=()

step() { # NAME LOG CMD...: runs CMD, its output to LOG and to stdout
	local name=$1 log=$out/$2 rc
	shift 2
	echo "== $name: $*"
	"$@" >"$log" 2>&1
	rc=$?
	cat "$log"
	if [ "$rc" -eq 77 ]; then
		echo "SKIP $name (exit 77)"
	elif [ "$rc" -ne 0 ]; then
		echo "FAIL $name (exit $rc)"
		failed+=("$name")
	fi
	return "$rc"
}

drift=${GPU_CHECK_DRIFT_S:-0}
mkdir -p "$out/gc-shared" "$out/gc-static" "$out/py" || exit 2
step gpu-check gpu-check.log "$build/bench/gpu-check" --drift-s "$drift" --keep-traces --trace-dir "$out/gc-shared"
step gpu-check-static-cudart gpu-check-static.log "$build/bench/gpu-check-static-cudart" --drift-s "$drift" \
	--keep-traces --trace-dir "$out/gc-static"
for t in "$out"/gc-shared/*.ptz; do [ -f "$t" ] && traces+=("$t"); done

if step led-optimizer-gpu led.log "$build/examples/led_optimizer_gpu" --trace "$out/led.ptz"; then
	traces+=("$out/led.ptz")
fi

if [ -d "$build/python/ptz" ] && "$py" -c "import torch, cupy" 2>/dev/null; then
	if PYTHONPATH=$build/python step gpu-python-check gpu-python.log "$py" "$src/bench/gpu_python_check.py" \
		"$ana" "$out/py"; then
		for t in "$out"/py/*.ptz; do [ -f "$t" ] && traces+=("$t"); done
	fi
else
	echo "SKIP gpu-python-check: no ptz extension in $build/python or torch/cupy do not import"
fi

list=$(IFS=:; echo "${traces[*]}")
echo "== real GPU traces: ${traces[*]}"
PTZ_AGREE_TRACES=$list step export-agree agree.log "${AGREE_PYTHON:-$py}" "$src/tests/export/agree/check_agree.py" "$src" "$ana" \
	"$build/tests/gen-edge-trace" "$build/tests/gen-review-trace" "$build/tests/gen-gpu-trace" "$out/agree"

n=$(nproc)
for t in "${traces[@]}"; do
	for mode in "--json -" --report; do
		a=$("$ana" -j 1 "$t" $mode --no-progress 2>&1 | sha1sum)
		b=$("$ana" -j "$n" "$t" $mode --no-progress 2>&1 | sha1sum)
		if [ "$a" = "$b" ]; then
			echo "PASS -j 1 = -j $n: $mode $(basename "$t")"
		else
			echo "FAIL -j 1 != -j $n: $mode $(basename "$t")"
			failed+=("jobs $mode $(basename "$t")")
		fi
	done
done

step peaks-gpu peaks.log "$ana" peaks --gpu

step meson-gpu-suite meson-gpu.log meson test -C "$build" --suite gpu --print-errorlogs
step meson-examples-gpu meson-examples-gpu.log meson test -C "$build" examples-gpu --print-errorlogs

echo "== ${#failed[@]} failed${failed[*]:+: ${failed[*]}}"
[ ${#failed[@]} -eq 0 ]
