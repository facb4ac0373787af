#!/usr/bin/env bash
# tests/cli/check_jobs.sh PTANALYZE GEN_TRACE SMALL_TRACE - ptanalyze -j N:
# the traces of a set analyzed at once (cli/cli_main.c, run_jobs()) give
# the view and the comparison of one at a time, byte for byte, and the
# first unreadable file in the set's order is the one reported, whatever
# order the workers finished in. In the 'tsan' suite too: ana_run() on
# several threads at once must share nothing (ThreadSanitizer). TAP.
set -u
ANA=$1
GEN=$2
SMALL=$3
TMP=$(mktemp -d "${PTZ_TEST_TMPDIR:-/tmp}/ptz-jobs-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
n=0
failed=0
check() { # check DESC COMMAND...: ok when COMMAND succeeds
	local desc=$1
	shift
	n=$((n + 1))
	if "$@"; then
		echo "ok $n - $desc"
	else
		failed=$((failed + 1))
		echo "not ok $n - $desc"
		echo "# rc=$rc; stderr:"; head -c 1500 "$TMP/err" | sed 's/^/#   /'
	fi
}
run() { "$ANA" "$@" >"$TMP/out" 2>"$TMP/err"; rc=$?; }

"$GEN" "$TMP/a.ptz" --cmp-base 10 && "$GEN" "$TMP/b.ptz" --cmp-new 10 && "$GEN" "$TMP/c.ptz" --deep 300 &&
	"$GEN" "$TMP/d.ptz" --cmp-base 10 || { echo "Bail out! generator failed"; exit 1; }
set4=("$TMP/a.ptz" "$TMP/b.ptz" "$SMALL" "$TMP/c.ptz" "$TMP/d.ptz" "$TMP/a.ptz")
run report "${set4[@]}" -j 1 --json "$TMP/j1.json"
check "report of 6 traces -j 1 exits 0" [ "$rc" -eq 0 ]
cp "$TMP/out" "$TMP/t1.txt"
run report "${set4[@]}" -j 4 --json "$TMP/j4.json"
check "report of 6 traces -j 4: the JSON of -j 1, byte for byte" cmp -s "$TMP/j1.json" "$TMP/j4.json"
check "report of 6 traces -j 4: the text of -j 1" cmp -s "$TMP/t1.txt" "$TMP/out"
run compare --base "$TMP/a.ptz" --base "$TMP/d.ptz" --new "$TMP/b.ptz" --new "$TMP/b.ptz" -j 1 --json "$TMP/c1.json"
rc1=$rc
run compare --base "$TMP/a.ptz" --base "$TMP/d.ptz" --new "$TMP/b.ptz" --new "$TMP/b.ptz" -j 3 --json "$TMP/c3.json"
check "compare runs -j 3: the JSON and exit of -j 1" eval '[ "$rc" -eq "$rc1" ] && cmp -s "$TMP/c1.json" "$TMP/c3.json"'
printf 'not a trace' >"$TMP/bad1.ptz"
printf 'nor this' >"$TMP/bad2.ptz"
run report "$TMP/a.ptz" "$TMP/bad1.ptz" "$TMP/b.ptz" "$TMP/bad2.ptz" -j 4
check "-j 4 with two unreadable files: exit 1, the first in order named, alone" \
	eval '[ "$rc" -eq 1 ] && grep -q "bad1.ptz" "$TMP/err" && ! grep -q "bad2.ptz" "$TMP/err"'
run report "$TMP/a.ptz" "$TMP/b.ptz" -j 0
check "-j 0: usage, exit 2" eval '[ "$rc" -eq 2 ] && grep -q -- "-j: expected 1..64" "$TMP/err"'
echo "1..$n"
[ "$failed" -eq 0 ]
