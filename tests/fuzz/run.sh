#!/usr/bin/env bash
# tests/fuzz/run.sh [--smoke] [SECONDS] [TARGET...] - fuzz the readers of
# untrusted traces with libFuzzer, ASan and UBSan (tests/fuzz/README.md).
#
# TARGETs (default: all, in this order), one per layer:
#   reader    chunk reader and public reader API (.ptz input)
#   decoder   record decoder on one raw payload (8 bytes of first ticks + payload)
#   analyzer  ana_run() and its text and CSV reports (.ptz)
#   json      ana_run() and its JSON report (.ptz)
#   compare   ptanalyze compare, text and JSON (.ptz)
#   suggest   ptanalyze suggest, text and JSON (.ptz)
#   html      the report and comparison HTML pages (.ptz)
#   perfetto  Perfetto protobuf export (.ptz)
#   chrome    Chrome JSON export (.ptz)
#   folded    folded-stacks export of an analyzed trace (.ptz)
#   merge     ptanalyze merge's reader of JSON reports (.json)
# SECONDS (default 60) is the whole run's fuzzing time, shared equally by the
# targets, which run one after the other: `run.sh 600` gives each 60 s.
#
# Without --smoke: configures (first time) and builds build-fuzz/ with clang,
# then fuzzes each target from its own corpus build-fuzz/fuzz-corpus/TARGET/,
# which grows across runs and is never committed; findings (crash-*, leak-*,
# timeout-*, oom-*, slow-unit-*) land in build-fuzz/fuzz-artifacts/TARGET/.
# --smoke (the meson test suite 'fuzz-smoke', which .ci/run's fuzz stage
# runs): builds nothing, starts from the seeds only in
# build-fuzz/fuzz-smoke/TARGET/ and gives EACH target SECONDS.
#
# Seeds: tests/data/golden, tests/data/corrupt and tests/fuzz/seeds (*.ptz; merge:
# the JSON reports of tests/data/golden),
# content-named so that a rerun adds nothing twice, plus an empty input; the
# decoder's are the raw chunk payloads of the same files (gen-stored-seeds
# --payloads). Every target uses tests/fuzz/ptz.dict.
#
# Exit status: 0 if nothing was found, 1 on a finding (the reproducer's path
# and the log are printed), 2 on a usage or build error.
# Environment: FUZZ_BUILD (default <repo>/build-fuzz), FUZZ_JOBS (default 1)
# parallel jobs per target, FUZZ_ARGS extra libFuzzer flags, FUZZ_SMOKE_SECONDS
# (with --smoke) the time per target instead of SECONDS.
# Reproduce a finding: build-fuzz/tests/fuzz/fuzz-TARGET FILE
# Minimize it: build-fuzz/tests/fuzz/fuzz-TARGET -minimize_crash=1 -runs=10000 FILE
set -u
all_targets="reader decoder analyzer json compare suggest html perfetto chrome folded merge"
smoke=0
if [ "${1:-}" = --smoke ]; then
	smoke=1
	shift
fi
secs=${1:-60}
# the meson suite passes 60; FUZZ_SMOKE_SECONDS shortens it for a quick check
[ "$smoke" = 1 ] && [ -n "${FUZZ_SMOKE_SECONDS:-}" ] && secs=$FUZZ_SMOKE_SECONDS
case $secs in '' | *[!0-9]*) echo "usage: run.sh [--smoke] [SECONDS] [TARGET...] (targets: $all_targets)" >&2; exit 2 ;; esac
[ $# -gt 0 ] && shift
targets=${*:-$all_targets}
for t in $targets; do
	case " $all_targets " in *" $t "*) ;; *) echo "run.sh: unknown target '$t' (targets: $all_targets)" >&2; exit 2 ;; esac
done
src=$(cd "$(dirname "$0")/../.." && pwd)
bld=${FUZZ_BUILD:-$src/build-fuzz}
jobs=${FUZZ_JOBS:-1}

if [ "$smoke" = 0 ]; then
	if [ ! -f "$bld/build.ninja" ]; then
		CC=clang CXX=clang++ meson setup "$bld" "$src" -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false \
			-Dtests=disabled -Dcuda=disabled -Dbuildtype=debugoptimized || exit 2
	fi
	ninja -C "$bld" $(for t in $targets; do echo "tests/fuzz/fuzz-$t"; done) tests/fuzz/gen-stored-seeds || exit 2
	ntargets=$(echo $targets | wc -w)
	per=$((secs / ntargets))
	[ "$per" -ge 1 ] || per=1
	root=$bld
	corpus_dir=fuzz-corpus art_dir=fuzz-artifacts
else
	per=$secs
	root=$bld/fuzz-smoke
	corpus_dir=corpus art_dir=artifacts
fi
for t in $targets; do
	[ -x "$bld/tests/fuzz/fuzz-$t" ] || { echo "run.sh: $bld/tests/fuzz/fuzz-$t not built" >&2; exit 2; }
done

seed_files() {
	if [ "$1" = merge ]; then # JSON reports with sketches
		for f in "$src"/tests/data/golden/*.json; do
			[ -s "$f" ] && echo "$f"
		done
		return
	fi
	for f in "$src"/tests/data/golden/*.ptz "$src"/tests/data/corrupt/*.ptz "$src"/tests/fuzz/seeds/*.ptz; do
		[ -s "$f" ] && echo "$f"
	done
}

# Per target: the largest input it mutates to. The .ptz seeds are under
# 24 KiB (32 KiB lets them grow a few records); raw payloads are smaller.
# quarantine_size_mb=16 (default 256): with 256 MB of freed memory held
# back, no execution ever reuses memory, so every allocation maps and
# faults in fresh pages: that was half of the analyzer's time (3.7 times
# slower). 16 MB still holds back many executions' worth of frees.
# -entropic=0: every .ptz input has thousands of features (one per record
# path), and entropic scheduling spent 40% of the old all-in-one harness's
# time updating their frequencies.
max_len() { case $1 in decoder) echo 16384 ;; merge) echo 65536 ;; *) echo 32768 ;; esac; }

found=0 summary=
for t in $targets; do
	corpus=$root/$corpus_dir/$t
	art=$root/$art_dir/$t
	[ "$smoke" = 0 ] || rm -rf "$corpus"
	mkdir -p "$corpus" "$art"
	if [ "$t" = decoder ]; then
		seed_files "$t" | xargs "$bld/tests/fuzz/gen-stored-seeds" --payloads "$corpus" || exit 2
	else
		seed_files "$t" | while read -r f; do
			cp -n "$f" "$corpus/seed-$(sha1sum "$f" | cut -c1-16)"
		done
	fi
	[ -e "$corpus/seed-empty" ] || : > "$corpus/seed-empty"

	stamp=$(mktemp "$root/.fuzz-start.XXXXXX")
	log=$root/run-$t-$(date +%Y%m%d-%H%M%S).log
	echo "== fuzz-$t: $per s, corpus $corpus"
	# each job (FUZZ_JOBS > 1) writes fuzz-N.log in the working directory
	work=$(mktemp -d "$root/.fuzz-work.XXXXXX")
	(cd "$work" && ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1:quarantine_size_mb=16 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		"$bld/tests/fuzz/fuzz-$t" "$corpus" \
		-dict="$src/tests/fuzz/ptz.dict" \
		-max_len="$(max_len "$t")" -rss_limit_mb=2048 -malloc_limit_mb=2048 -timeout=10 -entropic=0 \
		-max_total_time="$per" -print_final_stats=1 \
		$([ "$jobs" -gt 1 ] && echo "-jobs=$jobs -workers=$jobs") \
		-artifact_prefix="$art/" ${FUZZ_ARGS:-}) >"$log" 2>&1
	rc=$?
	for j in "$work"/fuzz-*.log; do
		[ -e "$j" ] || continue
		cat "$j" >>"$log"
		grep -q 'ERROR: libFuzzer\|SUMMARY: \(Address\|Undefined\|Leak\)Sanitizer' "$j" && rc=1
	done
	rm -rf "$work"
	new=$(find "$art" -type f -newer "$stamp")
	rm -f "$stamp"
	# the last status line: "#N DONE cov: C ft: F corp: U/S lim: L exec/s: E rss: R"
	stats=$(grep -E '^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE|INITED)' "$log" | tail -n 1 |
		sed -E 's/^#([0-9]+)[[:space:]]+[A-Z]+[[:space:]]+/\1 runs, /')
	summary+="fuzz-$t: $stats"$'\n'
	if [ "$rc" -ne 0 ] || [ -n "$new" ]; then
		found=1
		echo "run.sh: fuzz-$t: FINDING (exit $rc, log $log)" >&2
		grep -E -A 30 '^==[0-9]+==ERROR|runtime error|fuzz-decoder:|ERROR: libFuzzer' "$log" | head -n 60 >&2
		for f in $new; do
			echo "run.sh: reproducer: $f  (reproduce: $bld/tests/fuzz/fuzz-$t $f)" >&2
		done
	else
		echo "fuzz-$t: nothing found ($stats; log $log)"
	fi
done
printf '%s' "$summary"
if [ "$found" -ne 0 ]; then
	echo "run.sh: findings: see above" >&2
	exit 1
fi
echo "run.sh: nothing found"
