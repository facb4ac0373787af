#!/usr/bin/env bash
# tests/cli/check_cli_edges.sh PTANALYZE GEN_TRACE SMALL_TRACE [deep|jobs GEN_GPU GEN_REVIEW GPU_TRACE] - what a
# demanding user hits (the CLI, the analyzer's outputs and the
# viewer export): --until 0, a --thread that does not exist, an output path
# that is the trace itself, a full stdout, CSV/JSON/text with names holding
# commas, quotes, CR, LF, control bytes and a non-UTF-8 byte, a call path
# 601 levels deep; ptanalyze compare's verdict, exit codes and usage
# errors on two recorder traces; ptanalyze suggest and peaks (files, JSON,
# usage errors). With 'deep': a trace 200,000 levels deep (a section
# never ended in a loop) must be reported, not crash, and a recursion
# 100,000 deep in seconds, not minutes. With 'jobs': ptanalyze -j N against
# -j 1, for a set and for one trace's threads, GPU traces included
# (gen-gpu-trace's, gen-review-trace's repeated keys, GPU_TRACE recorded on
# a real GPU; run in the ThreadSanitizer suite too). Output is TAP.
set -u
ANA=$1
GEN=$2
SMALL=$3
MODE=${4:-}
TMP=$(mktemp -d "${PTZ_TEST_TMPDIR:-/tmp}/ptz-cli-edges-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
n=0
failed=0
check() { # check DESC COMMAND...: ok when COMMAND succeeds
	local desc=$1
	shift
	n=$((n + 1))
	if "$@" 2>"$TMP/check-err"; then
		echo "ok $n - $desc"
	else
		failed=$((failed + 1))
		echo "not ok $n - $desc"
		echo "# rc=$rc; stderr:"; head -c 1500 "$TMP/err" | sed 's/^/#   /'
		if [ -s "$TMP/check-err" ]; then # a Python check's assertion, say
			echo "# the check's stderr:"; tail -c 1500 "$TMP/check-err" | sed 's/^/#   /'
		fi
	fi
}
run() { "$ANA" "$@" >"$TMP/out" 2>"$TMP/err"; rc=$?; }

if [ "$MODE" = jobs ]; then
	# -j N: the traces of a set analyzed at once (cli/cli_main.c, run_jobs())
	# give the view and the comparison of one at a time, byte for byte, and
	# the first unreadable file in the set's order is the one reported,
	# whatever order the workers finished in. In the 'tsan' suite too:
	# ana_run() on several threads at once must share nothing.
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
	# -j N on one trace: its threads read at once (analyzer/ana_build.c, read_threads_parallel()):
	# the text, CSV and JSON of -j 1, byte for byte
	for t in "$SMALL" "$TMP/a.ptz" "$TMP/c.ptz"; do
		for fmt in "--csv -" "--json -" "--flat"; do
			# shellcheck disable=SC2086 # fmt is two words
			"$ANA" "$t" $fmt -j 1 >"$TMP/one" 2>&1
			# shellcheck disable=SC2086
			"$ANA" "$t" $fmt -j 3 >"$TMP/three" 2>&1
			check "one trace ($(basename "$t")) $fmt -j 3: the output of -j 1" cmp -s "$TMP/one" "$TMP/three"
		done
	done
	# GPU traces: their GPU and async records are deferred by the readers and paired in file order
	# after (replay_deferred()): the same pairs, waiting halves and peaks as one thread's file-order pass
	GEN_GPU=$5 GEN_REVIEW=$6 GPU_TRACE=$7
	"$GEN_GPU" "$TMP/g.ptz" --random 7 >/dev/null && "$GEN_GPU" "$TMP/gn.ptz" --snapnest >/dev/null &&
		"$GEN_REVIEW" "$TMP/rp.ptz" pairs >/dev/null || { echo "Bail out! GPU generators failed"; exit 1; }
	for t in "$TMP/g.ptz" "$TMP/gn.ptz" "$TMP/rp.ptz" "$GPU_TRACE"; do
		for fmt in "--csv -" "--json -" "--report" "--flat"; do
			# shellcheck disable=SC2086 # fmt is two words
			"$ANA" "$t" $fmt -j 1 >"$TMP/one" 2>&1
			# shellcheck disable=SC2086
			"$ANA" "$t" $fmt -j 3 >"$TMP/three" 2>&1
			check "GPU trace ($(basename "$t")) $fmt -j 3: the output of -j 1" cmp -s "$TMP/one" "$TMP/three"
		done
	done
	printf 'not a trace' >"$TMP/bad1.ptz"
	printf 'nor this' >"$TMP/bad2.ptz"
	run report "$TMP/a.ptz" "$TMP/bad1.ptz" "$TMP/b.ptz" "$TMP/bad2.ptz" -j 4
	check "-j 4 with two unreadable files: exit 1, the first in order named, alone" \
		eval '[ "$rc" -eq 1 ] && grep -q "bad1.ptz" "$TMP/err" && ! grep -q "bad2.ptz" "$TMP/err"'
	run report "$TMP/a.ptz" "$TMP/b.ptz" -j 0
	check "-j 0: usage, exit 2" eval '[ "$rc" -eq 2 ] && grep -q -- "-j: expected 1..64" "$TMP/err"'
	echo "1..$n"
	[ "$failed" -eq 0 ]
	exit
fi
if [ "$MODE" = deep ]; then
	"$GEN" "$TMP/deep.ptz" --noend 200000 || { echo "Bail out! generator failed"; exit 1; }
	run "$TMP/deep.ptz"
	check "deep: report exits 0" [ "$rc" -eq 0 ]
	check "deep: 200,000 open sections counted" grep -q '200000 open at end' "$TMP/out"
	check "deep: 200,000 rows of inner" [ "$(grep -c '^ *inner ' "$TMP/out")" -eq 200000 ]
	run "$TMP/deep.ptz" --flat
	check "deep: --flat exits 0" eval '[ "$rc" -eq 0 ] && grep -q "^inner  *200000 " "$TMP/out"'
	run info "$TMP/deep.ptz"
	check "deep: info exits 0" [ "$rc" -eq 0 ]
	# a recursion 100,000 deep, every section ended: rows indented by depth
	# must not cost O(depth) each (the report took minutes, quadratic)
	"$GEN" "$TMP/rec.ptz" --deep 100000 || { echo "Bail out! generator failed"; exit 1; }
	timeout 15 "$ANA" "$TMP/rec.ptz" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	check "deep recursion: report within 15 s, 100,000 rows, each with its name" \
		eval '[ "$rc" -eq 0 ] && [ "$(grep -cE "^ *(\[[0-9]+\] )?rec +1 " "$TMP/out")" -eq 100000 ]'
	check "deep recursion: level 16 indented 30 spaces, deeper rows 32 with their level" \
		eval 'grep -qE "^ {30}rec +1 " "$TMP/out" && grep -qE "^ {32}\[17\] rec +1 " "$TMP/out" &&
			grep -qE "^ {32}\[100000\] rec +1 " "$TMP/out"'
	# --json of a recursion 3,000 deep: rows deeper than 256 levels carry
	# their innermost 256 names and path_elided (the full paths were 4.5 M
	# names, 113 MB of text); rows are written one at a time
	"$GEN" "$TMP/rec3k.ptz" --deep 3000 || { echo "Bail out! generator failed"; exit 1; }
	if ldd "$ANA" 2>/dev/null | grep -q libasan; then
		n=$((n + 1)); echo "ok $n - # SKIP deep --json peak RSS: not measured under AddressSanitizer"
	else
		rss=$(python3 -c 'import resource, subprocess, sys
p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024 if p.returncode == 0 else -1)' \
			"$ANA" "$TMP/rec3k.ptz" --json "$TMP/rec3k.json" --no-progress)
		check "deep --json: exit 0, all 3,000 levels, peak RSS $rss MB <= 100 MB" \
			eval '[ "$rss" -ge 0 ] && [ "$rss" -le 100 ] && grep -q "\"depth\": 3000," "$TMP/rec3k.json"'
		check "deep --json: the 3,000-level row keeps 256 names, path_elided 2744" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
r = [x for x in d["tree"] if x["depth"] == 3000]
assert len(r) == 1 and r[0]["path_elided"] == 2744 and r[0]["path"] == ["rec"] * 256, r[0]["path_elided"]
assert all("path_elided" not in x for x in d["tree"] if x["depth"] <= 256)
assert all(len(x["path"]) == x["depth"] for x in d["tree"] if x["depth"] <= 256)' "$TMP/rec3k.json"
	fi
	# --json of 30,000 distinct call paths: written a row at a time, its
	# peak RSS stays near the report's (the whole document built first
	# took 11x: 2.2 GB for 100,000 paths)
	"$GEN" "$TMP/wide.ptz" --wide 30000 || { echo "Bail out! generator failed"; exit 1; }
	if ldd "$ANA" 2>/dev/null | grep -q libasan; then
		n=$((n + 1)); echo "ok $n - # SKIP wide --json peak RSS: not measured under AddressSanitizer"
	else
		rss() { python3 -c 'import resource, subprocess, sys
p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024 if p.returncode == 0 else -1)' "$@"; }
		r0=$(rss "$ANA" "$TMP/wide.ptz" --no-progress)
		r1=$(rss "$ANA" "$TMP/wide.ptz" --json "$TMP/wide.json" --no-progress)
		check "wide --json: 30,000 paths, peak RSS $r1 MB <= 1.5 x the report's $r0 MB + 10 MB" \
			eval '[ "$r0" -gt 0 ] && [ "$r1" -gt 0 ] && [ "$r1" -le $((r0 * 3 / 2 + 10)) ] &&
				[ "$(grep -c "\"name\": \"w" "$TMP/wide.json")" -eq 120000 ]'
		rm -f "$TMP/wide.json"
	fi
	# CSV and JSON of a section never ended in a loop of 20,000 iterations:
	# 20,000 levels, each with a closed "inner". Full paths would be 2 x
	# 200 M names (over 1 GB of CSV); bounded, each row holds at most 256
	"$GEN" "$TMP/noend20k.ptz" --noend 20000 || { echo "Bail out! generator failed"; exit 1; }
	timeout 60 "$ANA" "$TMP/noend20k.ptz" --csv "$TMP/noend.csv" --json "$TMP/noend.json" --no-progress \
		>/dev/null 2>"$TMP/err"
	rc=$?
	check "never-ended loop: --csv and --json exit 0 within 60 s, each under 150 MB" \
		eval '[ "$rc" -eq 0 ] && [ "$(stat -c %s "$TMP/noend.csv")" -lt 150000000 ] &&
			[ "$(stat -c %s "$TMP/noend.json")" -lt 150000000 ]'
	check "never-ended loop: paths cut to their innermost 256 names past 256 levels" python3 -c '
import csv, json, sys
csv.field_size_limit(1 << 30)
rows = {(r["thread"], int(r["depth"])): r["path"] for r in csv.DictReader(open(sys.argv[1])) if r["view"] == "tree"
        and r["name"] == "inner"}
assert rows[("all", 256)] == ";".join(["step"] * 255 + ["inner"]), rows[("all", 256)][:50]
assert rows[("all", 257)] == "[257] ...;" + ";".join(["step"] * 255 + ["inner"]), rows[("all", 257)][:50]
assert rows[("0", 20000)] == "[20000] ...;" + ";".join(["step"] * 255 + ["inner"])
d = json.load(open(sys.argv[2]))
r = {x["depth"]: x for x in d["threads"][0]["tree"] if x["name"] == "inner"}
assert "path_elided" not in r[256] and r[256]["path"] == ["step"] * 255 + ["inner"]
assert r[257]["path_elided"] == 1 and r[257]["path"] == ["step"] * 255 + ["inner"]
assert r[20000]["path_elided"] == 19744 and len(r[20000]["path"]) == 256' "$TMP/noend.csv" "$TMP/noend.json"
	rm -f "$TMP/noend.csv" "$TMP/noend.json" "$TMP/rec3k.json"
	run suggest "$TMP/deep.ptz" --json "$TMP/deep-suggest.json"
	check "deep: suggest exits 0 and names the 200,000 open sections" \
		eval '[ "$rc" -eq 0 ] && grep -q "\"open-at-end\"" "$TMP/deep-suggest.json"'
	run suggest "$TMP/rec.ptz" --json "$TMP/rec-suggest.json" --top 1000
	check "deep recursion: suggest exits 0" [ "$rc" -eq 0 ]
	echo "1..$n"
	[ "$failed" -eq 0 ]
	exit
fi

# ---- --until 0 is an empty window, not "no limit"
for args in "--until 0" "--since 1 --until 0" "--until 1e-12"; do
	run "$SMALL" $args
	check "$args: usage error" eval '[ "$rc" -eq 2 ] && [ ! -s "$TMP/out" ] && grep -q "until must be later than --since" "$TMP/err"'
done

# ---- --thread N that the trace does not have: an error, not an empty report
run "$SMALL" --thread 99
check "--thread 99: exit 1, nothing on stdout" eval '[ "$rc" -eq 1 ] && [ ! -s "$TMP/out" ] && grep -q "no thread with index 99" "$TMP/err"'
run "$SMALL" --thread 99 --csv "$TMP/t.csv"
check "--thread 99 --csv: exit 1" [ "$rc" -eq 1 ]
run "$SMALL" --thread 1
check "--thread 1 still reports" eval '[ "$rc" -eq 0 ] && grep -q "(thread 1)" "$TMP/out"'

# ---- an output path that is the trace itself: refused, the trace kept
for opt in "export --chrome" "export --perfetto" "export --folded" "report --csv" "report --json"; do
	cp "$SMALL" "$TMP/victim.ptz"
	run ${opt% *} ${opt#* } "$TMP/victim.ptz" "$TMP/victim.ptz"
	check "$opt onto the trace: exit 2, trace intact" \
		eval '[ "$rc" -eq 2 ] && cmp -s "$SMALL" "$TMP/victim.ptz" && grep -q "is the trace itself" "$TMP/err"'
done

# ---- two outputs naming one file: refused, not one overwriting the other
run "$SMALL" --csv "$TMP/both.out" --json "$TMP/both.out"
check "--csv X --json X: exit 2, nothing written" \
	eval '[ "$rc" -eq 2 ] && [ ! -e "$TMP/both.out" ] && grep -q "two outputs name the file" "$TMP/err"'

# ---- a stdout that cannot take the report (a full disk): exit 1, not 0
(trap '' XFSZ; ulimit -f 1; "$ANA" "$SMALL" --flat >"$TMP/big" 2>"$TMP/err")
rc=$?
check "report into a file that cannot grow past 1 KiB: exit 1" \
	eval '[ "$rc" -eq 1 ] && grep -q "cannot write to standard output" "$TMP/err"'

# ---- a pipe or a FIFO is not a trace file: a clear error, never a hang
run <(cat "$SMALL")
check "a pipe: exit 1, 'not a regular file'" eval '[ "$rc" -eq 1 ] && grep -q "not a regular file" "$TMP/err"'
mkfifo "$TMP/fifo"
timeout 10 "$ANA" "$TMP/fifo" >"$TMP/out" 2>"$TMP/err"
rc=$?
check "a FIFO without a writer: exit 1 at once, 'not a regular file'" \
	eval '[ "$rc" -eq 1 ] && grep -q "not a regular file" "$TMP/err"'

# ---- outputs that would be lost or mixed: usage errors, nothing written
for args in "info --csv $TMP/i.csv" "info --json $TMP/i.json" "info --flat" "info --top 3" "--csv - --json -"; do
	rm -f "$TMP/i.csv" "$TMP/i.json"
	case $args in
	info*) run info "$SMALL" ${args#info } ;;
	*) run "$SMALL" $args ;;
	esac
	check "$args: usage error, exit 2, nothing written" \
		eval '[ "$rc" -eq 2 ] && [ ! -s "$TMP/out" ] && [ ! -e "$TMP/i.csv" ] && [ ! -e "$TMP/i.json" ] &&
			grep -q "^usage\|ptanalyze: " "$TMP/err"'
done

# ---- an output naming what stdout already is counts as stdout ('-')
run "$SMALL" --csv /dev/stdout --json -
check "--csv /dev/stdout --json -: usage error, exit 2" eval '[ "$rc" -eq 2 ] && [ ! -s "$TMP/out" ]'
"$ANA" "$SMALL" --csv "$TMP/so.csv" --no-progress >"$TMP/so.csv" 2>"$TMP/err"
rc=$?
check "--csv FILE with stdout sent to FILE: FILE is the CSV alone, no report mixed in" \
	eval '[ "$rc" -eq 0 ] && head -1 "$TMP/so.csv" | grep -q "^view,thread,path," && ! grep -q "^process " "$TMP/so.csv" &&
		[ "$(python3 -c "import csv, sys; print(len(list(csv.reader(open(sys.argv[1])))))" "$TMP/so.csv")" -gt 10 ]'

# ---- a full disk under the CSV or JSON (written as made): an error, not exit 0
for fmt in csv json; do
	run "$SMALL" --$fmt /dev/full --no-progress
	check "--$fmt /dev/full: exit 1, 'cannot write'" eval '[ "$rc" -eq 1 ] && grep -q "cannot write" "$TMP/err"'
done

# ---- names with CSV/JSON/terminal specials, a path 601 levels deep
"$GEN" "$TMP/g.ptz" || { echo "Bail out! generator failed"; exit 1; }
run "$TMP/g.ptz" --csv "$TMP/g.csv" --json "$TMP/g.json"
check "names trace: exit 0" [ "$rc" -eq 0 ]
check "text report: no control byte in a row, the LF name on one line" \
	eval '! LC_ALL=C grep -q "[[:cntrl:]]" "$TMP/out" && grep -q "^  line?feed  " "$TMP/out" && grep -q "^  carriage?return  " "$TMP/out"'
cat >"$TMP/check.py" <<'PY'
import csv, json, sys
names = ['comma,name', 'quote"name', 'line\nfeed', 'carriage\rreturn', 'ctl\x01byte', 'del\x7fbyte', 'bad\xffutf8', 'plain']
rows = list(csv.reader(open(sys.argv[1], newline='', encoding='latin-1')))
assert rows[0][0] == 'view' and len(rows[0]) == 40, rows[0]
assert all(len(r) == 40 for r in rows), set(len(r) for r in rows)
flat = [r[4] for r in rows if r[0] == 'flat' and r[1] == 'all']
assert set(names) <= set(flat), flat
recs = {int(r[3]): r[2] for r in rows if r[0] == 'tree' and r[1] == 'all' and r[4] == 'rec'}
seg = recs[256].split(';')  # 256 levels: the whole path
assert len(seg) == 256 and seg[0] == 'root' and set(seg[1:]) == {'rec'}, (len(seg), seg[:2])
seg = recs[601].split(';')  # deeper: "[601] ..." and the innermost 256 names
assert max(recs) == 601 and len(seg) == 257 and seg[0] == '[601] ...' and set(seg[1:]) == {'rec'}, (len(seg), seg[:2])
paths = [r[2] for r in rows if r[0] == 'tree' and r[1] == 'all']
assert len(paths) == len(set(paths)), 'two tree rows with one path'
j = json.load(open(sys.argv[2], encoding='utf-8'))
jn = [r['name'] for r in j['flat']]
assert set(n.replace('\xff', '?') for n in names) <= set(jn), jn
dj = {r['depth']: r for r in j['tree'] if r['name'] == 'rec'}
assert len(dj[256]['path']) == 256 and dj[256]['path'][0] == 'root' and 'path_elided' not in dj[256]
assert max(dj) == 601 and dj[601]['path'] == ['rec'] * 256 and dj[601]['path_elided'] == 345, dj[601].get('path_elided')
PY
check "CSV (RFC 4180, 40 columns, exact names, a 601-level path cut to 256 names) and JSON (valid, path_elided)" \
	python3 "$TMP/check.py" "$TMP/g.csv" "$TMP/g.json"

# ptanalyze compare on two recorder traces: "slower" spins 2 ms instead of 200 us
"$GEN" "$TMP/cb.ptz" --cmp-base 40 && "$GEN" "$TMP/cn.ptz" --cmp-new 40 || { echo "Bail out! generator failed"; exit 1; }
run compare "$TMP/cb.ptz" "$TMP/cn.ptz"
check "compare: exits 0 without --fail-on-regression" [ "$rc" -eq 0 ]
check "compare: iter;slower is a regression of more than +100%" \
	eval 'grep -Eq "^regression +\+[1-9][0-9]{2,}\.[0-9]%.* iter;slower( .*)?$" "$TMP/out"'
check "compare: 3 paths in both, 3 tested" grep -q '^paths: *3 in both (3 tested), 0 only in base, 0 only in new' "$TMP/out"
run compare "$TMP/cb.ptz" "$TMP/cn.ptz" --fail-on-regression
check "compare --fail-on-regression: exit 3 on a regression" [ "$rc" -eq 3 ]
run compare "$TMP/cb.ptz" "$TMP/cb.ptz" --fail-on-regression
check "compare a trace with itself: exit 0, nothing changed" \
	eval '[ "$rc" -eq 0 ] && grep -q "^verdict: 0 regressions, 0 improvements, 0 within noise, 3 not significant" "$TMP/out"'
run compare "$TMP/cb.ptz" "$TMP/cn.ptz" --json - --noise 10 --alpha 0.01 --bootstrap 200
check "compare --json -: the schema and the options" python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["schema"] == "ptanalyze-compare/3", j["schema"]
m = j["method"]
assert m["noise"] == 0.1 and m["alpha"] == 0.01 and m["bootstrap"] == 200, m
# the FCR-adjusted level: 1 - max(R, 1) alpha / M over the per-call and total tests
assert m["interval"] == "benjamini-yekutieli-fcr" and m["family"] >= 3, m
assert abs(m["ci_level"] - (1 - max(m["selected"], 1) * 0.01 / m["family"])) < 1e-9, m
rows = j["rows"]
s = [r for r in rows if r["name"] == "slower" and rows[r["parent"]]["name"] == "iter"][0]
assert s["verdict"] == "regression" and s["n_base"] == 39 and s["ci_low"] > 0.5, s  # 10x slower; a loaded machine widens it
assert j["counts"]["regression"] >= 1' "$TMP/out"
# runs as the unit: --base and --new, repeated
"$GEN" "$TMP/cb2.ptz" --cmp-base 40 && "$GEN" "$TMP/cn2.ptz" --cmp-new 40 || { echo "Bail out! generator failed"; exit 1; }
run compare --base "$TMP/cb.ptz" --base "$TMP/cb2.ptz" --new "$TMP/cn.ptz" --new "$TMP/cn2.ptz" --json -
check "compare --base x2 --new x2: runs as the unit, every run read" python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
m = j["method"]
assert m["unit"] == "run" and m["runs_base"] == 2 and m["runs_new"] == 2, m
s = [r for r in j["rows"] if r["name"] == "steady"][0]
assert s["n_base"] == 2 and s["n_new"] == 2 and s["df"] is not None and s["df"] > 0, s' "$TMP/out"
run compare --base "$TMP/cb.ptz" --base "$TMP/cb2.ptz" --new "$TMP/cn.ptz" --new "$TMP/cn2.ptz"
check "compare runs: the text names each run and the method" \
	eval 'grep -q "^base: .*cb2.ptz" "$TMP/out" && grep -q "^method: runs as the unit: 2 base and 2 new runs" "$TMP/out"'
run compare --base "$TMP/cb.ptz" --new "$TMP/cn.ptz"
check "compare --base --new, one each: as BASE NEW" \
	eval '[ "$rc" -eq 0 ] && grep -q "one run a side" "$TMP/out"'
run compare --base "$TMP/cb.ptz" --base "$TMP/cb2.ptz" --new "$TMP/cn.ptz"
check "compare 2 runs against 1: usage, exit 2" eval '[ "$rc" -eq 2 ] && grep -q "at least 2 runs a side" "$TMP/err"'
run compare --base "$TMP/cb.ptz" --new "$TMP/cn.ptz" "$TMP/cb2.ptz"
check "compare --base/--new and a positional trace: usage, exit 2" [ "$rc" -eq 2 ]
run "$TMP/cb.ptz" --base "$TMP/cb2.ptz"
check "--base without compare: usage, exit 2" eval '[ "$rc" -eq 2 ] && grep -q "belong to compare" "$TMP/err"'
run compare --base "$TMP/cb.ptz" --base "$TMP/nonexistent.ptz" --new "$TMP/cn.ptz" --new "$TMP/cn2.ptz"
check "compare runs, one unreadable: exit 1" [ "$rc" -eq 1 ]
# many traces as one view: ranks of a job, summed, with the spread across them
SLURM_JOB_ID=77 SLURM_PROCID=3 "$GEN" "$TMP/r3.ptz" --cmp-base 10 || { echo "Bail out! generator failed"; exit 1; }
run export --chrome "$TMP/r3-chrome.json" --perfetto "$TMP/r3.pftrace" "$TMP/r3.ptz"
check "exports name the process with its job and rank (both formats)" python3 -c '
import json, sys
names = [e["args"]["name"] for e in json.load(open(sys.argv[1])) if e.get("name") == "process_name"]
assert len(names) == 1 and names[0].endswith(" (job 77 rank 3)"), names
assert b" (job 77 rank 3)" in open(sys.argv[2], "rb").read()' "$TMP/r3-chrome.json" "$TMP/r3.pftrace"
run report "$TMP/cb.ptz" "$TMP/cn.ptz" "$TMP/r3.ptz"
check "report of 3 traces: one line a trace, with job and rank" \
	eval '[ "$rc" -eq 0 ] && grep -q "^traces: 3" "$TMP/out" && grep -q "r3.ptz .* job 77 rank 3" "$TMP/out"'
check "report of 3 traces: the slowed section's slowest trace is the new run" \
	eval 'grep -Eq " \[1\] \([0-9.]+ ms\) +iter;slower$" "$TMP/out"'
run "$TMP/cb.ptz" "$TMP/cn.ptz" --json -
check "report of 2 traces --json: sums and spread equal each trace's own report" python3 -c '
import json, subprocess, sys
j = json.load(open(sys.argv[1]))
assert j["schema"] == "ptanalyze-multi/2" and len(j["traces"]) == 2, j["traces"]
per = [json.loads(subprocess.run([sys.argv[2], t, "--json", "-"], capture_output=True, text=True).stdout)
       for t in sys.argv[3:]]
rows = {r["path"]: r for r in j["rows"]}
for tp in ("iter", "iter;slower", "iter;steady"):
    tot = [[x for x in p["tree"] if ";".join(x["path"]) == tp][0]["total_ns"] for p in per]
    cnt = [[x for x in p["tree"] if ";".join(x["path"]) == tp][0]["count"] for p in per]
    r = rows[tp]
    assert r["total_ns"] == sum(tot) and r["count"] == sum(cnt) and r["traces"] == 2, (tp, r, tot)
    assert r["max_total_ns"] == max(tot) and r["slowest_trace"] == tot.index(max(tot)), (tp, r, tot)
    assert abs(r["max_over_mean"] - max(tot) * 2 / sum(tot)) < 1e-9, (tp, r)
    # the merged aggregate: exact moments, min, max and sums; pooled mean and std
    rr = [[x for x in p["tree"] if ";".join(x["path"]) == tp][0] for p in per]
    n = [x["count"] for x in rr]
    assert r["min_ns"] == min(x["min_ns"] for x in rr) and r["max_ns"] == max(x["max_ns"] for x in rr), (tp, r)
    assert abs(r["mean_ns"] - sum(tot) / sum(n)) <= 1e-9 * r["mean_ns"], (tp, r)
    # pooled: within-trace sums of squares plus the distance of each mean to the whole mean (this
    # form: the means come with 12 digits, and sum(k m^2) - N M^2 cancels them away)
    mu = sum(tot) / sum(n)
    ss = sum((k - 1) * x["std_ns"] ** 2 + k * (x["mean_ns"] - mu) ** 2 for k, x in zip(n, rr))
    assert abs(r["std_ns"] - (ss / (sum(n) - 1)) ** 0.5) <= 1e-6 * r["std_ns"] + 1e-3, (tp, r["std_ns"], ss)
    # between the p50s of the traces, within the stated error of the histograms (0.4 %: each p50 is
    # the value of its bucket clamped to the min and max of its trace, the merged one to the merged range)
    lo, hi = min(x["p50_ns"] for x in rr), max(x["p50_ns"] for x in rr)
    assert lo * (1 - 0.004) - 1 <= r["p50_ns"] <= hi * (1 + 0.004) + 1, (tp, r["p50_ns"], lo, hi)
    for k in ("read_bytes", "written_bytes", "flops"):
        assert r[k] == sum(x[k] for x in rr), (tp, k)
' "$TMP/out" "$ANA" "$TMP/cb.ptz" "$TMP/cn.ptz"
run report "$TMP/cn.ptz" "$TMP/cn.ptz" --json -
check "report of one trace twice --json: every figure of the trace's own rows, twice the count and time" python3 -c '
import json, subprocess, sys
j = json.load(open(sys.argv[1]))
one = json.loads(subprocess.run([sys.argv[2], sys.argv[3], "--json", "-"], capture_output=True, text=True).stdout)
rows = {r["path"]: r for r in j["rows"]}
assert len(rows) == len(one["tree"]), (len(rows), len(one["tree"]))
for x in one["tree"]:
    r = rows[";".join(x["path"])]
    # nearest-rank percentiles of a multiset doubled are its own (rank ceil(2qn) -> ceil(qn))
    for k in ("min_ns", "max_ns", "p50_ns", "p90_ns", "p99_ns", "mean_ns"):
        assert r[k] == x[k], (x["path"], k, r[k], x[k])
    assert r["count"] == 2 * x["count"] and r["total_ns"] == 2 * x["total_ns"], x["path"]
' "$TMP/out" "$ANA" "$TMP/cn.ptz"
# reports written elsewhere, merged by their sketches: the view of the traces, figure for figure
"$GEN" "$TMP/rec300.ptz" --deep 300 || { echo "Bail out! generator failed"; exit 1; }
for t in cb cn r3 rec300; do "$ANA" "$TMP/$t.ptz" --json "$TMP/$t.json" >/dev/null || echo "# $t --json failed"; done
run merge "$TMP/cb.json" "$TMP/cn.json" "$TMP/r3.json" "$TMP/rec300.json" --json "$TMP/merged.json"
cp "$TMP/out" "$TMP/merged.txt"
run report "$TMP/cb.ptz" "$TMP/cn.ptz" "$TMP/r3.ptz" "$TMP/rec300.ptz" --json "$TMP/direct.json"
check "merge of 4 JSON reports = report of the 4 traces (JSON, every figure; paths past 256 levels too)" python3 -c '
import json, sys
m, d = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert [t.pop("file") for t in m["traces"]] == [sys.argv[3] + x + ".json" for x in ("cb", "cn", "r3", "rec300")]
for t in d["traces"]:
    t.pop("file")
assert any(r["path"].startswith("[2") for r in d["rows"]), "no elided path in the test"
assert m == d, [(a, b) for a, b in zip(m["rows"], d["rows"]) if a != b][:2]
' "$TMP/merged.json" "$TMP/direct.json" "$TMP/"
check "merge text = report text but for the file names" \
	eval 'diff <(sed "s/\.json /.ptz /" "$TMP/merged.txt") "$TMP/out" >/dev/null'
run merge "$TMP/direct.json"
check "merge of a view (not a trace report): exit 1, the file and the reason named" \
	eval '[ "$rc" -eq 1 ] && grep -q "direct.json: not a report of ptanalyze TRACE --json" "$TMP/err"'
python3 -c 'import json, sys
j = json.load(open(sys.argv[1]))
j["tree"][0]["sketch"]["hist"] = j["tree"][0]["sketch"]["hist"][2:]
json.dump(j, open(sys.argv[2], "w"))' "$TMP/cb.json" "$TMP/bad.json"
run merge "$TMP/cn.json" "$TMP/bad.json"
check "merge of a report whose sketch lost a bucket: exit 1, named" \
	eval '[ "$rc" -eq 1 ] && grep -q "bad.json: tree row 0: its sketch.s histogram does not hold its count" "$TMP/err"'
# a directory, or a pattern the shell left quoted, stands for its files in name order
mkdir -p "$TMP/set" "$TMP/reports" "$TMP/none"
cp "$TMP/cb.ptz" "$TMP/cn.ptz" "$TMP/set/" && cp "$TMP/cb.json" "$TMP/cn.json" "$TMP/reports/"
run report "$TMP/set" --json "$TMP/dir.json"
run report "$TMP/set/cb.ptz" "$TMP/set/cn.ptz" --json "$TMP/files.json"
check "report DIR = report of its .ptz files in name order" cmp -s "$TMP/dir.json" "$TMP/files.json"
run report "$TMP/set/c*.ptz" --json "$TMP/pat.json"
check "report 'PATTERN' (quoted) = report of the files it matches" cmp -s "$TMP/pat.json" "$TMP/files.json"
run merge "$TMP/reports" --json "$TMP/mdir.json"
check "merge DIR: its .json reports" eval '[ "$rc" -eq 0 ] && grep -q "reports/cn.json" "$TMP/mdir.json"'
run export --chrome "$TMP/dir-export.json" "$TMP/set"
check "export DIR: one process per file" python3 -c '
import json, sys
assert len({e["pid"] for e in json.load(open(sys.argv[1])) if e.get("ph") == "X"}) == 2' "$TMP/dir-export.json"
run report "$TMP/none"
check "report of a directory with no .ptz: exit 1, said" \
	eval '[ "$rc" -eq 1 ] && grep -q "none: no .ptz file in this directory" "$TMP/err"'
run report "$TMP/set/nomatch*.ptz"
check "a pattern that matches nothing: exit 1, said" \
	eval '[ "$rc" -eq 1 ] && grep -q "no file matches this pattern" "$TMP/err"'
# reports for merge without the threads' rows: the same view
for t in cb cn; do "$ANA" "$TMP/$t.ptz" --json "$TMP/$t-m.json" --no-thread-rows >/dev/null; done
run merge "$TMP/cb-m.json" "$TMP/cn-m.json" --json "$TMP/merged-m.json"
run report "$TMP/cb.ptz" "$TMP/cn.ptz" --json "$TMP/direct-m.json"
check "--no-thread-rows: no thread's rows; merge of such reports = report of the traces" python3 -c '
import json, sys
one = json.load(open(sys.argv[3]))
assert one["threads"] and all("tree" not in t and "flat" not in t for t in one["threads"]), one["threads"][0].keys()
assert one["tree"] and all("sketch" in r for r in one["tree"])
m, d = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
for t in m["traces"] + d["traces"]:
    t.pop("file")
assert m == d
' "$TMP/merged-m.json" "$TMP/direct-m.json" "$TMP/cb-m.json"
run "$TMP/cb.ptz" --csv "$TMP/x.csv" --no-thread-rows
check "--no-thread-rows without --json: usage, exit 2" \
	eval '[ "$rc" -eq 2 ] && grep -q -- "--no-thread-rows goes with --json FILE alone" "$TMP/err"'
run merge "$TMP/cb.json" --csv "$TMP/x.csv"
check "merge --csv: usage, exit 2" eval '[ "$rc" -eq 2 ] && grep -q "merge takes --json FILE and --top N" "$TMP/err"'
run merge
check "merge of nothing: usage, exit 2" [ "$rc" -eq 2 ]
cp "$TMP/cb.ptz" "$TMP/dmg.ptz"
python3 -c 'import os, sys
p = sys.argv[1]; off = os.path.getsize(p) - 200
with open(p, "r+b") as f:
    f.seek(off); b = f.read(16); f.seek(off); f.write(bytes(x ^ 0xff for x in b))' "$TMP/dmg.ptz"
run report "$TMP/dmg.ptz" "$TMP/cn.ptz"
check "report of 2 traces, one damaged: the view of both, the damage named, exit 1" \
	eval '[ "$rc" -eq 1 ] && grep -q "^traces: 2" "$TMP/out" && grep -q "cn.ptz" "$TMP/out" && grep -q "dmg.ptz: error" "$TMP/err"'
run "$TMP/cb.ptz" "$TMP/cn.ptz" --csv "$TMP/x.csv"
check "report of 2 traces --csv: usage, exit 2" eval '[ "$rc" -eq 2 ] && grep -q "several traces" "$TMP/err"'
run compare "$TMP/cb.ptz"
check "compare with one trace: usage, exit 2" eval '[ "$rc" -eq 2 ] && grep -q "expected two trace files" "$TMP/err"'
run compare "$TMP/cb.ptz" "$TMP/cn.ptz" --flat
check "compare --flat: usage, exit 2" [ "$rc" -eq 2 ]
run "$TMP/cb.ptz" --noise 3
check "--noise without compare: usage, exit 2" eval '[ "$rc" -eq 2 ] && grep -q "belong to compare" "$TMP/err"'
run "$TMP/cb.ptz" --gate-threshold 10
check "--gate-threshold without compare: usage, exit 2" eval '[ "$rc" -eq 2 ] && grep -q "belong to compare" "$TMP/err"'
run compare "$TMP/cb.ptz" "$TMP/cn.ptz" --gate-threshold 10 --fail-on-regression
check "compare --gate-threshold 10: tested paths keep their test's verdict, exit 3" \
	eval '[ "$rc" -eq 3 ] && grep -q "against\$" "$TMP/out" && ! grep -q "threshold only (n=" "$TMP/out"'
run suggest "$TMP/cb.ptz" --min-priority urgent
check "suggest --min-priority urgent: usage, exit 2" eval '[ "$rc" -eq 2 ] && grep -q "expected low, medium, high or critical" "$TMP/err"'
run suggest "$TMP/cb.ptz" --min-priority critical
check "suggest --min-priority critical: exit 0, only critical findings" \
	eval '[ "$rc" -eq 0 ] && ! grep -Eq "^ *[0-9]+\. (low|medium|high) \[" "$TMP/out"'
run "$TMP/cb.ptz" --min-priority high
check "--min-priority without suggest: usage, exit 2" [ "$rc" -eq 2 ]
for bad in "--alpha 1" "--alpha 0" "--noise -1" "--bootstrap 5" "--noise x" "--gate-threshold 0" \
	"--gate-threshold -5" "--gate-threshold x"; do
	run compare "$TMP/cb.ptz" "$TMP/cn.ptz" $bad
	check "compare $bad: usage, exit 2" [ "$rc" -eq 2 ]
done
run compare "$TMP/cb.ptz" "$TMP/missing.ptz" --fail-on-regression
check "compare with a missing trace: exit 1" [ "$rc" -eq 1 ]
run compare "$TMP/g.ptz" "$TMP/g.ptz" --top 1000
check "compare: a 601-level path prints as its depth and innermost 4 names" \
	grep -q ' \[601\] \.\.\.;rec;rec;rec;rec$' "$TMP/out"
DAMAGED=$(dirname "$SMALL")/../corrupt/crc-mismatch-payload-zstd.ptz
run compare "$DAMAGED" "$TMP/cn.ptz" --fail-on-regression
check "compare with a damaged trace: exit 1 (over 3), the damage on stderr, the comparison printed" \
	eval '[ "$rc" -eq 1 ] && grep -q "error: " "$TMP/err" && grep -q "^verdict:" "$TMP/out"'
run compare "$TMP/cb.ptz" "$TMP/cn.ptz" --json "$TMP/cb.ptz"
check "compare --json onto a trace: usage, exit 2" [ "$rc" -eq 2 ]

# ptanalyze suggest and peaks
run suggest "$TMP/cn.ptz"
check "suggest: exits 0, names its triggers" eval '[ "$rc" -eq 0 ] && grep -q "^triggers: impact gate 1%" "$TMP/out"'
check "suggest: iter;slower (2 ms of each iteration) is a hot section" grep -q '\[hot-section\] iter;slower$' "$TMP/out"
check "suggest without --peaks: no roofline class" eval '! grep -q "\[roofline\]" "$TMP/out"'
run peaks --seconds 0.01 --json "$TMP/m.json"
check "peaks --json FILE: exit 0, every figure positive" python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["schema"] == "ptz-machine/1", j
for k in ("fp64_gflops", "fp32_gflops", "memory_gbps"):
    for c in ("one_core", "all_cores"):
        assert j[k][c] > 0, (k, c, j[k])
assert j["cpus"] >= 1 and j["isa"]' "$TMP/m.json"
run suggest "$TMP/cn.ptz" --peaks "$TMP/m.json" --json - --threshold hot_self_pct=5 --fp32
check "suggest --json -: schema, thresholds, the peaks used" python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["schema"] == "ptanalyze-suggest/1", j["schema"]
assert j["thresholds"]["hot_self_pct"] == 5 and j["thresholds"]["min_pct"] == 1
assert j["peaks"]["precision"] == "fp32" and j["peaks"]["gbps_one_core"] > 0
assert any(f["rule"] == "hot-section" and f["path"] == ["iter", "slower"] for f in j["findings"]), j["findings"]' "$TMP/out"
run suggest "$TMP/g.ptz" --top 1000
check "suggest: a 601-level trace, exit 0" [ "$rc" -eq 0 ]
run suggest "$DAMAGED"
check "suggest on a damaged trace: exit 1, the damage named in a finding" \
	eval '[ "$rc" -eq 1 ] && grep -q "\[data-quality\] damaged-chunks" "$TMP/out"'
run suggest "$TMP/cn.ptz" --peaks "$TMP/missing.json"
check "suggest --peaks with a missing file: exit 1, the file named" \
	eval '[ "$rc" -eq 1 ] && grep -q "missing.json" "$TMP/err"'
echo '{"schema": "ptz-machine/1", "memory_gbps": {"one_core": -3}}' >"$TMP/bad.json"
run suggest "$TMP/cn.ptz" --peaks "$TMP/bad.json"
check "suggest --peaks with a negative figure: exit 1" [ "$rc" -eq 1 ]
for bad in "" "$TMP/cn.ptz $TMP/cb.ptz" "$TMP/cn.ptz --threshold bogus=1" "$TMP/cn.ptz --threshold hot_self_pct=x" \
	"$TMP/cn.ptz --threshold hot_self_pct=0" "$TMP/cn.ptz --threshold hot_self_pct" "$TMP/cn.ptz --thread 0" \
	"$TMP/cn.ptz --flat" "$TMP/cn.ptz --seconds 1"; do
	# shellcheck disable=SC2086
	run suggest $bad
	check "suggest $bad: usage, exit 2" [ "$rc" -eq 2 ]
done
cp "$TMP/m.json" "$TMP/m2.json"
run suggest "$TMP/cn.ptz" --peaks "$TMP/m2.json" --json "$TMP/m2.json"
check "suggest --json onto the --peaks file: usage, exit 2, the file kept" \
	eval '[ "$rc" -eq 2 ] && cmp -s "$TMP/m.json" "$TMP/m2.json"'
run peaks --seconds 0.01 --json "$TMP/no-such-dir/m.json"
check "peaks --json into a missing directory: exit 1 at once" eval '[ "$rc" -eq 1 ] && ! grep -q measuring "$TMP/err"'
cp "$TMP/m.json" "$TMP/m3.json"
timeout -s INT 1 "$ANA" peaks --seconds 5 --json "$TMP/m3.json" >/dev/null 2>&1
rc=$?
check "peaks interrupted while measuring: an existing profile is left as it was" \
	eval '[ "$rc" -eq 124 ] && cmp -s "$TMP/m.json" "$TMP/m3.json"'
run "$TMP/cn.ptz" --report --peaks "$TMP/m.json"
check "--peaks without suggest: usage, exit 2" eval '[ "$rc" -eq 2 ] && grep -q "belong to suggest" "$TMP/err"'
run peaks "$TMP/cn.ptz"
check "peaks with a trace: usage, exit 2" [ "$rc" -eq 2 ]
run peaks --seconds 0
check "peaks --seconds 0: usage, exit 2" [ "$rc" -eq 2 ]
run peaks --gpu=x
check "peaks --gpu=x: usage, exit 2" eval '[ "$rc" -eq 2 ] && grep -q "CUDA device number" "$TMP/err"'
run "$TMP/cn.ptz" --report --gpu
check "--gpu without peaks: usage, exit 2" eval '[ "$rc" -eq 2 ] && grep -q "belongs to peaks" "$TMP/err"'
# peaks --gpu measures where a CUDA driver is (a GPU machine), and says why
# not, exit 1, leaving no profile behind, where there is none (CI)
run peaks --gpu --seconds 0.01 --json "$TMP/gpu-peaks.json"
if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
	check "peaks --gpu with a CUDA driver: a gpu group" eval \
		'[ "$rc" -eq 0 ] && python3 -c "import json,sys; g=json.load(open(sys.argv[1]))[\"gpu\"]; assert g[\"fp32_gflops\"] > 0 and g[\"memory_gbps\"] > 0" "$TMP/gpu-peaks.json"'
else
	check "peaks --gpu without a CUDA driver: exit 1, why, no file" eval \
		'[ "$rc" -eq 1 ] && grep -q "no CUDA driver" "$TMP/err" && [ ! -e "$TMP/gpu-peaks.json" ]'
fi

echo "1..$n"
[ "$failed" -eq 0 ]
