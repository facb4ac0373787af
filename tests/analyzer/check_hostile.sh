#!/bin/bash
# tests/analyzer/check_hostile.sh PTANALYZE GEN_HOSTILE - ptanalyze on small
# checksum-valid traces that imply far more than they hold (issue 17,
# items 8, 9 and 11; gen_hostile_trace.c writes them): each finishes within
# a time limit and (outside AddressSanitizer) a peak RSS bound, with exact
# or flagged figures; names aimed at spreadsheets and terminals come out
# safe in the text report, the CSV and the JSON. Output is TAP.
set -u
ANA=$1
GEN=$2
TMP=$(mktemp -d "${PTZ_TEST_TMPDIR:-/tmp}/ptz-hostile-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
n=0
failed=0
rc=0
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
asan=0
ldd "$ANA" 2>/dev/null | grep -q libasan && asan=1
# run LIMIT_S ARGS...: ptanalyze ARGS with a time limit; rc, and rss (peak MB, -1 under ASan)
run() {
	local lim=$1
	shift
	rss=$(python3 -c 'import resource, subprocess, sys
with open(sys.argv[1], "wb") as o, open(sys.argv[2], "wb") as e:
    try:
        p = subprocess.run(sys.argv[4:], stdout=o, stderr=e, timeout=float(sys.argv[3]))
        rc = p.returncode
    except subprocess.TimeoutExpired:
        rc = 124
print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)' "$TMP/out" "$TMP/err" "$lim" "$ANA" "$@")
	rc=${rss% *}
	rss=${rss#* }
	[ $asan = 1 ] && rss=-1
}
rss_le() { [ "$rss" -le "$1" ]; } # true under ASan (rss -1)

for m in "far1 farid 1" "far farid 16777215" "deep deep 2000000" "threads threads 20000" "wide wide 20000" \
	"names names" "sums sums" "bomb bomb 2"; do
	set -- $m
	"$GEN" "$TMP/$1.ptz" "${@:2}" || { echo "Bail out! generator failed: $m"; exit 1; }
done

# item 8: one name with id 2^24-1 costs what id 1 costs (it took 1.3 GB, 14 s)
run 30 "$TMP/far1.ptz" --no-progress
cp "$TMP/out" "$TMP/far1.out"
run 30 "$TMP/far.ptz" --no-progress
check "far id: report exits 0, peak RSS $rss MB <= 40 MB" eval '[ $rc -eq 0 ] && rss_le 40'
check "far id: the same report as id 1" cmp -s "$TMP/out" "$TMP/far1.out"
run 30 "$TMP/far.ptz" --csv - --no-progress
check "far id: CSV exits 0 with the name" eval '[ $rc -eq 0 ] && grep -q "work" "$TMP/out"'

# item 9: 2,000,000 levels from a small file: the analyzed depth is capped and said
run 120 info "$TMP/deep.ptz"
check "deep: info exits 0 within the limit, peak RSS $rss MB <= 600 MB" eval '[ $rc -eq 0 ] && rss_le 600'
check "deep: 2,000,000 open at end, 1,737,856 too deep said" \
	eval 'grep -q "2000000 sections open at end" "$TMP/out" && grep -q "^too deep: *1737856 sections nested deeper than 262144" "$TMP/out"'
run 120 "$TMP/deep.ptz" --json "$TMP/deep.json" --no-progress
check "deep: JSON too_deep 1737856" python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))["trace"]
assert t["too_deep"] == 1737856 and t["open_at_end"] == 2000000, t' "$TMP/deep.json"
rm -f "$TMP/deep.json"

# item 9: 20,000 one-section threads: per-thread state stays small
run 60 info "$TMP/threads.ptz"
check "threads: info exits 0, peak RSS $rss MB <= 300 MB" eval '[ $rc -eq 0 ] && rss_le 300'

# item 9: folded stacks of a chain 20,000 deep elide as the CSV does (1 GB before)
run 60 export --folded "$TMP/wide.folded" "$TMP/wide.ptz"
check "folded: exit 0, under 40 MB, lines of at most 257 frames, [20000] ... prefix" \
	eval '[ $rc -eq 0 ] && [ $(stat -c %s "$TMP/wide.folded") -lt 40000000 ] &&
		[ $(awk -F";" "NF > m { m = NF } END { print m }" "$TMP/wide.folded") -eq 257 ] &&
		grep -q "^\[20000\] \.\.\.;work;" "$TMP/wide.folded"'
rm -f "$TMP/wide.folded"

# item 9: guards for untrusted traces: a zstd bomb (8 M records in a few KB)
# refused by --max-records from its chunk headers alone, for a report and an
# export; --max-memory turns a trace too big for it into "out of memory"
run 30 --max-records 1000000 info "$TMP/bomb.ptz"
check "bomb: --max-records refuses info at once, exit 1, says why" \
	eval '[ $rc -eq 1 ] && grep -q "more than --max-records 1000000" "$TMP/err"'
run 30 --max-records 1000000 export --chrome "$TMP/bomb.json" "$TMP/bomb.ptz"
check "bomb: --max-records refuses the Chrome export, exit 1, no output" \
	eval '[ $rc -eq 1 ] && grep -q "more than --max-records" "$TMP/err" && [ ! -s "$TMP/bomb.json" ]'
run 60 --max-records 100000000 info "$TMP/bomb.ptz"
check "bomb: within --max-records the trace is read (exit 0)" [ "$rc" -eq 0 ]
if [ $asan = 1 ]; then
	n=$((n + 1)); echo "ok $n - # SKIP --max-memory: address space limits do not mix with AddressSanitizer"
else
	run 60 --max-memory 100M info "$TMP/deep.ptz"
	check "deep: --max-memory 100M: out of memory said, exit 1, within 60 s" \
		eval '[ $rc -eq 1 ] && grep -q "out of memory" "$TMP/err"'
fi
run 10 --max-records 0 info "$TMP/far.ptz"
check "--max-records 0 is a usage error (exit 2)" [ "$rc" -eq 2 ]

# item 10: u64 figures past INT64_MAX stay exact in JSON; sums saturate and are flagged
run 30 "$TMP/sums.ptz" --json "$TMP/sums.json" --csv "$TMP/sums.csv" --no-progress
check "sums: JSON flops 10^19 exact, lost records/sections saturated and flagged" python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
t, flat = j["trace"], {r["name"]: r for r in j["flat"]}
M = 2**64 - 1
assert t["lost_records"] == M and t["lost_sections"] == M and t["saturated"] is True, t
assert flat["flops"]["flops"] == 10**19 and flat["flops"]["saturated"] is False, flat["flops"]
assert flat["other"]["flops"] == M and flat["other"]["saturated"] is True, flat["other"]' "$TMP/sums.json"
check "sums: CSV has the saturated column, flops exact" python3 -c '
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1], newline="")) if r["view"] == "flat" and r["thread"] == "all"]
f = {r["name"]: r for r in rows}
assert f["flops"]["flops"] == str(10**19) and f["flops"]["saturated"] == "0", f["flops"]
assert f["other"]["flops"] == str(2**64 - 1) and f["other"]["saturated"] == "1", f["other"]' "$TMP/sums.csv"
run 30 info "$TMP/sums.ptz"
check "sums: info says lost 2^64-1 (not 2^64-2) and saturated" \
	eval 'grep -q "^losses: *18446744073709551615 records, 18446744073709551615 sections" "$TMP/out" &&
		grep -q "^saturated:" "$TMP/out"'

# item 11: hostile names in the text report and the CSV
run 30 "$TMP/names.ptz" --flat --no-progress
check "names: text shows no ESC, C1 (UTF-8 or raw 0x9B), bidi override or isolate" python3 -c '
import sys
b = open(sys.argv[1], "rb").read()
for bad in (b"\x1b", b"\xc2\x9b", b"\x9b", b"\xe2\x80\xae", b"\xe2\x81\xa6", b"\t", b"\r"):
    assert bad not in b, bad
for want in (b"esc?[31m", b"c1?31m", b"raw?31m", b"bidi?txt.exe", b"iso?x"):
    assert want in b, want' "$TMP/out"
check "names: a NUL inside a name does not make two names one" \
	eval 'grep -q "^nul?aa " "$TMP/out" && grep -q "^nul?bb " "$TMP/out"'
run 30 "$TMP/names.ptz" --csv - --no-progress
check "names: CSV quotes formula starts with a single quote" python3 -c '
import csv, sys
names = {r["name"] for r in csv.DictReader(open(sys.argv[1], newline="", encoding="latin-1"))}
for n in ("=HYPERLINK(\"http://x\")", "+1+1", "-2-2", "@SUM(A1)", "\tTAB", "\rCR"):
    assert "\x27" + n in names and n not in names, n
assert not any(n[:1] in "=+-@\t\r" for n in names if n), names' "$TMP/out"
run 30 "$TMP/names.ptz" --json - --no-progress
check "names: JSON holds no raw ESC, C1 or bidi byte, and decodes to the names" python3 -c '
import json, sys
b = open(sys.argv[1], "rb").read()
for bad in (b"\x1b", b"\xc2\x9b", b"\x9b", b"\xe2\x80\xae", b"\xe2\x81\xa6"):
    assert bad not in b, bad
names = {r["name"] for r in json.loads(b)["flat"]}
assert any("\u202e" in n for n in names) and any("\u2066" in n for n in names), names' "$TMP/out"
"$ANA" export --chrome "$TMP/names.chrome.json" --no-progress "$TMP/names.ptz" 2>"$TMP/err"
check "names: Chrome JSON holds no raw C1 or bidi byte, and decodes to the names" python3 -c '
import json, sys
b = open(sys.argv[1], "rb").read()
for bad in (b"\x1b", b"\xc2\x9b", b"\xe2\x80\xae", b"\xe2\x81\xa6"):
    assert bad not in b, bad
d = json.loads(b)
ev = d["traceEvents"] if isinstance(d, dict) else d
assert any("\u202e" in e.get("name", "") for e in ev), "no bidi name"' "$TMP/names.chrome.json"

echo "1..$n"
[ "$failed" -eq 0 ]
