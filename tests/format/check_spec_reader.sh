#!/usr/bin/env bash
# tests/format/check_spec_reader.sh PYTHON PTZ_DUMP DATA_DIR [GEN_CMD...] - the
# independent reader ptz_spec_reader.py, written from doc/trace-format.md
# alone, must print the same canonical dump as ptz-dump (the C reader through
# include/ptz/format.h) for every golden and corrupt file and for traces
# recorded now. Each GEN is a program run as GEN OUT.ptz (a trace generator),
# or "--small PROGRAM", run as PROGRAM --small --trace OUT.ptz (an example
# workload), or "--rotated PROGRAM", run as PROGRAM OUT.ptz 1048576 30000
# (a rotated trace, §11: each of its parts is compared, the first a trace,
# the later ones windows, every one with its run id and part number). A missing python module is a TAP skip. Output is TAP.
set -u
PY=$1
DUMP=$2
DATA=$3
shift 3
HERE=$(cd "$(dirname "$0")" && pwd)
SPEC=$HERE/ptz_spec_reader.py
if ! "$PY" -c 'import zstandard, xxhash' 2>/dev/null; then
	echo "1..0 # SKIP $PY lacks zstandard or xxhash (Debian: python3-zstandard python3-xxhash)"
	exit 0
fi
TMP=$(mktemp -d "${PTZ_TEST_TMPDIR:-/tmp}/ptz-spec-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
n=0
failed=0
compare() { # compare DESC FILE: the two dumps of FILE are identical
	local desc=$1 f=$2
	n=$((n + 1))
	if ! "$PY" "$SPEC" "$f" >"$TMP/spec.txt" 2>"$TMP/spec.err"; then
		failed=$((failed + 1))
		echo "not ok $n - $desc: ptz_spec_reader.py failed"
		head -c 1500 "$TMP/spec.err" | sed 's/^/#   /'
		return
	fi
	if ! "$DUMP" "$f" >"$TMP/c.txt" 2>"$TMP/c.err"; then
		failed=$((failed + 1))
		echo "not ok $n - $desc: ptz-dump failed"
		head -c 1500 "$TMP/c.err" | sed 's/^/#   /'
		return
	fi
	if diff -u "$TMP/spec.txt" "$TMP/c.txt" >"$TMP/diff.txt"; then
		echo "ok $n - $desc ($(wc -l <"$TMP/c.txt") lines)"
	else
		failed=$((failed + 1))
		echo "not ok $n - $desc: dumps differ (--- spec, +++ C)"
		head -n 40 "$TMP/diff.txt" | sed 's/^/#   /'
	fi
}
# a dump that ends at open must still say so: the comparison is not empty
nonempty() {
	n=$((n + 1))
	if grep -q '^open ' "$TMP/c.txt" && grep -q '^records [1-9]' "$DUMP_OF_VALID"; then
		echo "ok $n - dumps carry records"
	else
		failed=$((failed + 1))
		echo "not ok $n - dumps carry records"
	fi
}
for f in "$DATA"/golden/*.ptz "$DATA"/corrupt/*.ptz; do
	compare "${f#"$DATA"/}" "$f"
done
"$DUMP" "$DATA/corrupt/valid.ptz" >"$TMP/valid.txt"
DUMP_OF_VALID=$TMP/valid.txt
nonempty
i=0
while [ $# -gt 0 ]; do
	i=$((i + 1))
	out=$TMP/gen$i.ptz
	n=$((n + 1))
	rotated=0
	if [ "$1" = --small ]; then
		prog=$(readlink -f "$2")
		cmd=("$prog" --small --trace "$out")
		shift 2
	elif [ "$1" = --rotated ]; then
		prog=$(readlink -f "$2")
		cmd=("$prog" "$out" 1048576 30000)
		rotated=1
		shift 2
	else
		prog=$(readlink -f "$1")
		cmd=("$prog" "$out")
		shift
	fi
	# every other generator runs as a batch job's rank: the header's job and rank (§2, 1.2)
	jobenv=()
	[ $((i % 2)) -eq 1 ] && jobenv=(SLURM_JOB_ID="4711 (\"x\")" SLURM_PROCID=$i)
	if [ "$rotated" = 1 ]; then
		if (cd "$TMP" && env "${jobenv[@]}" "${cmd[@]}" >"$TMP/gen.out" 2>&1) && [ -s "${out%.ptz}.000002.ptz" ]; then
			echo "ok $n - record $(basename "$prog") into parts"
			for part in "${out%.ptz}".[0-9][0-9][0-9][0-9][0-9][0-9].ptz; do
				compare "recorded by $(basename "$prog"), part $(basename "$part")" "$part"
				grep -q '^run_id [0-9a-f]\{16\} part [1-9]' "$TMP/c.txt" || { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $(basename "$part"): no run id in the dump"; }
				rm -f "$part"
			done
		else
			failed=$((failed + 1))
			echo "not ok $n - record $(basename "$prog") into parts"
			tail -n 5 "$TMP/gen.out" | sed 's/^/#   /'
		fi
		continue
	fi
	if (cd "$TMP" && env "${jobenv[@]}" "${cmd[@]}" >"$TMP/gen.out" 2>&1) && [ -s "$out" ]; then
		echo "ok $n - record $(basename "$prog")"
		compare "recorded by $(basename "$prog")" "$out"
	else
		failed=$((failed + 1))
		echo "not ok $n - record $(basename "$prog")"
		tail -n 5 "$TMP/gen.out" | sed 's/^/#   /'
	fi
	# small traces also seed the damaged variants below
	[ -f "$out" ] && [ "$(stat -c %s "$out")" -le 200000 ] || rm -f "$out"
done
# Damaged variants (tests/format/ptz_mutate.py, fixed seeds): payloads edited
# and re-checksummed, header fields changed, cuts, committed lengths, junk,
# dropped or swapped chunks. Each pair of dumps must be identical.
mkdir -p "$TMP/mut"
for src in "$DATA/corrupt/valid.ptz" "$DATA/golden/small.ptz" "$TMP"/gen*.ptz; do
	[ -f "$src" ] || continue
	"$PY" "$HERE/ptz_mutate.py" "$src" "$TMP/mut" "${PTZ_SPEC_MUTANTS:-60}" 1
done
nm=0
mfail=0
for f in "$TMP"/mut/*.ptz; do
	[ -f "$f" ] || continue
	nm=$((nm + 1))
	"$PY" "$SPEC" "$f" >"$TMP/spec.txt" 2>&1
	"$DUMP" "$f" >"$TMP/c.txt" 2>&1
	if ! cmp -s "$TMP/spec.txt" "$TMP/c.txt"; then
		mfail=$((mfail + 1))
		[ "$mfail" -le 3 ] && { echo "# $(basename "$f"): dumps differ"; diff "$TMP/spec.txt" "$TMP/c.txt" | head -n 12 | sed 's/^/#   /'; }
	fi
done
n=$((n + 1))
if [ "$nm" -ge 100 ] && [ "$mfail" -eq 0 ]; then
	echo "ok $n - $nm damaged variants: identical dumps"
else
	failed=$((failed + 1))
	echo "not ok $n - $nm damaged variants, $mfail differ"
fi
echo "1..$n"
[ "$failed" -eq 0 ]
