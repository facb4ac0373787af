#!/usr/bin/env bash
# tests/fuzz/run.sh [SECONDS] - build the libFuzzer harness (tests/fuzz/fuzz_trace.c)
# with ASan and UBSan in build-fuzz/ and fuzz every trace reader for SECONDS (default 60).
#
# Seeds: tests/data/**/*.ptz and tests/fuzz/seeds/*.ptz (traces written by the
# recorder and the test generators), copied into build-fuzz/fuzz-corpus/, which
# grows across runs and is never committed. Findings (crash-*, leak-*,
# timeout-*, oom-*) land in build-fuzz/fuzz-artifacts/. Exit status: 0 if
# nothing was found, 1 if libFuzzer reported a crash, leak, timeout or
# out-of-memory, 2 if the build failed.
#
# Environment: FUZZ_JOBS (default 1) parallel fuzzing jobs, FUZZ_BUILD (default
# <repo>/build-fuzz), FUZZ_ARGS extra libFuzzer flags.
# Reproduce one finding: build-fuzz/tests/fuzz/fuzz-trace FILE
set -u
secs=${1:-60}
src=$(cd "$(dirname "$0")/../.." && pwd)
bld=${FUZZ_BUILD:-$src/build-fuzz}
jobs=${FUZZ_JOBS:-1}

if [ ! -f "$bld/build.ninja" ]; then
	CC=clang CXX=clang++ meson setup "$bld" "$src" -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false \
		-Dtests=disabled -Dcuda=disabled -Dbuildtype=debugoptimized || exit 2
fi
ninja -C "$bld" tests/fuzz/fuzz-trace || exit 2

corpus=$bld/fuzz-corpus
art=$bld/fuzz-artifacts
mkdir -p "$corpus" "$art"
# seeds: content-named copies, so a rerun adds nothing twice
for f in "$src"/tests/data/*/*.ptz "$src"/tests/fuzz/seeds/*.ptz; do
	[ -s "$f" ] || continue
	cp -n "$f" "$corpus/seed-$(sha1sum "$f" | cut -c1-16)"
done
[ -e "$corpus/seed-empty" ] || : > "$corpus/seed-empty"

# The largest seed is under 64 KiB; 128 KiB lets inputs grow a few chunks.
# -entropic=0: every input has tens of thousands of features (one per
# record path), and entropic scheduling spent 40% of the time updating
# their frequencies (31 against 51 executions/s measured).
cd "$bld" || exit 2
stamp=$(mktemp "$bld/.fuzz-start.XXXXXX")
log=$bld/run-$(date +%Y%m%d-%H%M%S).log
ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	"$bld/tests/fuzz/fuzz-trace" "$corpus" \
	-dict="$src/tests/fuzz/ptz.dict" \
	-max_len=131072 -rss_limit_mb=2048 -malloc_limit_mb=2048 -timeout=10 -entropic=0 \
	-max_total_time="$secs" -print_final_stats=1 \
	$([ "$jobs" -gt 1 ] && echo "-jobs=$jobs -workers=$jobs") \
	-artifact_prefix="$art/" ${FUZZ_ARGS:-} 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
# with -jobs, libFuzzer writes each job's output to fuzz-N.log in the working directory
for j in fuzz-*.log; do
	[ "$j" -nt "$stamp" ] && grep -q 'ERROR: libFuzzer\|SUMMARY: \(Address\|Undefined\|Leak\)Sanitizer' "$j" && rc=1
done
new=$(find "$art" -type f -newer "$stamp")
rm -f "$stamp"
if [ "$rc" -ne 0 ] || [ -n "$new" ]; then
	echo "run.sh: findings (log $log):" >&2
	[ -z "$new" ] || ls -l $new >&2
	exit 1
fi
echo "run.sh: nothing found in $secs s (log $log)"
