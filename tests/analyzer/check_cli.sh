#!/usr/bin/env bash
# tests/analyzer/check_cli.sh PTANALYZE DATA_DIR CLI_SOURCE - the cli suite.
#
# ptanalyze's contract (cli/cli_main.c, STYLE §4): exit 0 = clean trace or
# torn tail recovered (a warning names the offset), 1 = damage inside the
# file (the report of the intact chunks is still printed, each problem goes
# to stderr with its offset) or an unreadable trace, 2 = usage error (message
# and usage on stderr, nothing on stdout). Errors read 'ptanalyze: PATH: ...'.
# Also: --help exits 0 and names every long option of CLI_SOURCE; rows of
# sections open during a loss are flagged '!'.
#
# DATA_DIR is tests/data (corrupt/ and golden/ below it). Output is TAP.
set -u
if [ $# -ne 3 ]; then
	echo "usage: $0 PTANALYZE DATA_DIR CLI_SOURCE" >&2
	exit 2
fi
ANA=$1
DATA=$2
SRC=$3
C=$DATA/corrupt
G=$DATA/golden
TMP=$(mktemp -d "${PTZ_TEST_TMPDIR:-/tmp}/ptz-cli-XXXXXX")
trap 'rm -rf "$TMP"' EXIT

n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() {
	n=$((n + 1))
	failed=$((failed + 1))
	echo "not ok $n - $1"
	shift
	for m in "$@"; do printf '%s\n' "$m" | sed 's/^/# /'; done
	echo "# stdout:"; head -c 2000 "$TMP/out" | sed 's/^/#   /'
	echo "# stderr:"; head -c 2000 "$TMP/err" | sed 's/^/#   /'
}

# run ARGS...: runs ptanalyze, stdout in $TMP/out, stderr in $TMP/err, status in $rc
run() {
	"$ANA" "$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
}

# expect_usage DESC MESSAGE ARGS...: exit 2, MESSAGE and a short usage on stderr (at most 5 lines in
# all, pointing to --help: the whole help buried the message), empty stdout
expect_usage() {
	local desc=$1 msg=$2
	shift 2
	run "$@"
	local why=()
	[ "$rc" -eq 2 ] || why+=("exit status $rc, expected 2")
	[ -s "$TMP/out" ] && why+=("stdout is not empty")
	grep -q '^usage: ptanalyze' "$TMP/err" || why+=("no usage on stderr")
	[ "$(wc -l <"$TMP/err")" -le 5 ] || why+=("$(wc -l <"$TMP/err") lines on stderr, not a short usage (at most 5)")
	grep -q "ptanalyze --help" "$TMP/err" || why+=("stderr does not point to 'ptanalyze --help'")
	grep -qF "ptanalyze: $msg" "$TMP/err" || why+=("stderr lacks 'ptanalyze: $msg'")
	if [ ${#why[@]} -eq 0 ]; then ok "$desc"; else not_ok "$desc" "${why[@]}"; fi
}

# ---- help and version
run --help
why=()
[ "$rc" -eq 0 ] || why+=("exit status $rc")
[ -s "$TMP/err" ] && why+=("stderr is not empty")
grep -q '^usage: ptanalyze' "$TMP/out" || why+=("no usage line on stdout")
# every long option of the getopt table, read from the source
opts=$(sed -n '/struct option longopts\[\]/,/{ NULL, 0, NULL, 0 }/p' "$SRC" | grep -o '{ "[a-z-]*"' | cut -d'"' -f2)
[ "$(echo "$opts" | wc -w)" -ge 10 ] || why+=("could not read the option table of $SRC")
for o in $opts; do
	grep -q -- "--$o\b" "$TMP/out" || why+=("--help does not mention --$o")
done
grep -q 'ptanalyze info TRACE' "$TMP/out" || why+=("--help does not mention the info command")
if [ ${#why[@]} -eq 0 ]; then ok "--help: exit 0, every option ($(echo $opts | wc -w)) named"; else not_ok "--help" "${why[@]}"; fi
run -h
if [ "$rc" -eq 0 ] && grep -q '^usage:' "$TMP/out"; then ok "-h is --help"; else not_ok "-h is --help"; fi
run --version
if [ "$rc" -eq 0 ] && grep -q '^ptanalyze [0-9]' "$TMP/out"; then ok "--version"; else not_ok "--version"; fi

# ---- usage errors: exit 2
S=$G/small.ptz
expect_usage "unknown option" "unknown or incomplete option '--bogus'" "$S" --bogus
expect_usage "option without its argument" "unknown or incomplete option '--top'" "$S" --top
expect_usage "no trace" "no trace file given"
expect_usage "no trace after a command" "no trace file given" info
expect_usage "two traces to info" "expected exactly one trace file" info "$S" "$S"
expect_usage "two traces with --csv" "a report of several traces takes --json FILE" "$S" "$S" --csv x.csv
expect_usage "bad --sort" "--sort: unknown key 'speed'" "$S" --sort speed
expect_usage "--top abc" "--top: expected a positive integer, got 'abc'" "$S" --top abc
expect_usage "--top 0" "--top: expected a positive integer, got '0'" "$S" --top 0
expect_usage "--top 3x" "--top: expected a positive integer, got '3x'" "$S" --top 3x
expect_usage "--depth -1" "--depth: expected a positive integer, got '-1'" "$S" --depth -1
expect_usage "--min-pct 101" "--min-pct: expected a percentage 0..100, got '101'" "$S" --min-pct 101
expect_usage "--thread x" "--thread: expected a thread index, got 'x'" "$S" --thread x
expect_usage "--bottlenecks 0" "--bottlenecks: expected a positive integer, got '0'" "$S" --bottlenecks 0
expect_usage "--since abc" "--since: expected seconds, got 'abc'" "$S" --since abc
expect_usage "--until -1" "--until: expected seconds, got '-1'" "$S" --until -1
expect_usage "--until before --since" "--until must be later than --since" "$S" --since 2 --until 1
# a usage error wins before the trace is opened
expect_usage "usage error with a missing trace" "--sort: unknown key 'x'" "$TMP/nosuch.ptz" --sort x
# a mistyped command is named as such, with the nearest command, not taken for a trace
expect_usage "mistyped command before a trace" "unknown command 'repot' (did you mean 'report'?)" repot "$S"
expect_usage "mistyped command alone" "unknown command 'repot' (did you mean 'report'?)" repot
expect_usage "swapped letters" "unknown command 'ifno' (did you mean 'info'?)" ifno "$S"
expect_usage "mistyped compare" "unknown command 'compair' (did you mean 'compare'?)" compair "$S" "$S"
expect_usage "unknown word before a trace" "unknown command 'frobnicate' (commands: report info" frobnicate "$S"
# ... but a word that names an existing file is a trace
cp "$S" "$TMP/repot"
run "$TMP/repot"
if [ "$rc" -eq 0 ] && grep -q '^process ' "$TMP/out"; then
	ok "an existing file named like a mistyped command is read as a trace"
else
	not_ok "an existing file named like a mistyped command is read as a trace"
fi
ana_abs=$(cd "$(dirname "$ANA")" && pwd)/$(basename "$ANA")
(cd "$TMP" && "$ana_abs" info repot >"$TMP/out" 2>"$TMP/err")
if [ $? -eq 0 ] && grep -q '^process:' "$TMP/out"; then ok "info repot (a file): read"; else not_ok "info repot (a file): read"; fi
(cd "$TMP" && "$ana_abs" repot --flat >"$TMP/out" 2>"$TMP/err")
if [ $? -eq 0 ] && grep -q '^Sections by name' "$TMP/out"; then ok "repot --flat (a file in the cwd): read"; else not_ok "repot --flat (a file in the cwd): read"; fi
# a missing trace stays a missing file, not a command
run "$TMP/nosuch.ptz"
if [ "$rc" -eq 1 ] && grep -q 'No such file' "$TMP/err" && ! grep -q 'unknown command' "$TMP/err"; then
	ok "a missing trace is a missing file"
else
	not_ok "a missing trace is a missing file"
fi

# ---- info: zstd and stored chunks apart (a single ratio said 1.0x for a trace of small chunks,
# which the recorder stores without trying zstd); the two kinds add up to the size line
run info "$S"
line=$(grep '^compression:' "$TMP/out")
if [ "$rc" -eq 0 ] && [ "$line" = "compression:  zstd 1 of 5 chunks, 176 -> 175 bytes (1.0x); 4 stored as is, 179 bytes (small or incompressible)" ] &&
	grep -q '^size: .* 5 chunks, payload 355 -> 354 bytes$' "$TMP/out"; then
	ok "info: 1 zstd chunk (176 -> 175 bytes) and 4 stored (179 bytes) counted apart"
else
	not_ok "info: zstd and stored chunks counted apart" "compression line: '$line'"
fi
for t in "$C"/*.ptz; do
	"$ANA" info "$t" >"$TMP/out" 2>"$TMP/err" || [ $? -eq 1 ] || continue
	grep -q '^size:' "$TMP/out" || continue
	if ! awk '/^size:/ { chunks = $4; stored = $9 }
		/^compression:/ { z = $3; of = $5; zs = ($8 == "->") ? $9 : 0; n = $(NF - 8); b = $(NF - 4) }
		END { exit !(of == chunks && z + n == chunks && zs + b == stored) }' "$TMP/out"; then
		not_ok "info $(basename "$t"): zstd and stored chunks do not add up to the size line" "$(grep -E '^(size|compression):' "$TMP/out")"
		bad_sum=1
	fi
done
[ -z "${bad_sum:-}" ] && ok "info on every corrupt-corpus trace: zstd + stored chunks and bytes = the size line's"

# ---- unreadable traces: exit 1, 'ptanalyze: PATH: ', nothing on stdout
unreadable() {
	local desc=$1 path=$2 msg=$3
	run "$path"
	local why=()
	[ "$rc" -eq 1 ] || why+=("exit status $rc, expected 1")
	[ -s "$TMP/out" ] && why+=("stdout is not empty")
	grep -q "^ptanalyze: $path: $msg" "$TMP/err" || why+=("stderr lacks 'ptanalyze: $path: $msg'")
	grep -q '^usage:' "$TMP/err" && why+=("usage printed for a trace error")
	if [ ${#why[@]} -eq 0 ]; then ok "$desc"; else not_ok "$desc" "${why[@]}"; fi
}
unreadable "nonexistent file" "$TMP/nosuch.ptz" "No such file or directory"
unreadable "a directory" "$TMP" ".*"
unreadable "bad magic" "$C/bad-magic.ptz" "header @0x0: bad magic"
unreadable "newer major version" "$C/bad-version.ptz" "header @0x0: format version 2.1"
unreadable "empty file" "$C/empty.ptz" "header @0x0: file has 0 bytes"
unreadable "file shorter than its header" "$C/trunc-file-header.ptz" "header @0x0: file has 2000 bytes"
run info "$TMP/nosuch.ptz"
if [ "$rc" -eq 1 ] && grep -q "^ptanalyze: $TMP/nosuch.ptz: " "$TMP/err"; then ok "info: nonexistent file"; else not_ok "info: nonexistent file"; fi

# ---- damage inside the file: report of the intact chunks, problems with offsets, exit 1
damaged() {
	local f=$1 msg=$2
	local p=$C/$f
	run "$p"
	local why=()
	[ "$rc" -eq 1 ] || why+=("exit status $rc, expected 1")
	grep -q '^process corrupt-gen (pid 4242)' "$TMP/out" || why+=("no report on stdout")
	grep -q '^name  *count  *total' "$TMP/out" || why+=("no table header in the report")
	grep -qF "ptanalyze: $p: error: $msg" "$TMP/err" || why+=("stderr lacks 'ptanalyze: $p: error: $msg'")
	grep -v "^ptanalyze: $p: error: " "$TMP/err" | grep -q . && why+=("a stderr line without the 'ptanalyze: PATH: error: ' prefix")
	grep -q '@0x[0-9a-f][0-9a-f]*' "$TMP/err" || why+=("no offset in the problem")
	if [ ${#why[@]} -eq 0 ]; then ok "damaged: $f"; else not_ok "damaged: $f" "${why[@]}"; fi
}
damaged crc-mismatch-payload-zstd.ptz "chunk @0x10ab: payload checksum mismatch"
damaged crc-mismatch-payload-raw.ptz "chunk @0x1270: payload checksum mismatch"
damaged crc-mismatch-chunk-header.ptz "chunk @0x1185: chunk header checksum mismatch; skipped 235 bytes"
damaged crc-mismatch-meta-payload.ptz "chunk @0x1000: payload checksum mismatch"
damaged absurd-stored-length.ptz "chunk @0x1185: chunk size out of bounds"
damaged overlong-length-mid.ptz "chunk @0x1185: chunk length runs into the next chunk"
damaged garbage-between-chunks.ptz "chunk @0x1270: bad chunk magic; skipped 1000 bytes"
damaged trailing-garbage.ptz "chunk @0x136d: bad chunk magic; skipped 200 bytes"
damaged unknown-chunk-kind.ptz "chunk @0x12b5: unknown chunk kind"
damaged raw-size-mismatch.ptz "chunk @0x10ab: zstd frame size disagrees with header"
damaged overlong-varint.ptz "chunk @0x1270: payload does not decode at byte 4"
# the machine-readable outputs say so too, and still come out
run "$C/crc-mismatch-payload-zstd.ptz" --json -
if [ "$rc" -eq 1 ] && grep -q '"corrupt": true' "$TMP/out" && grep -q '"offset": 4267' "$TMP/out" &&
	grep -q '"message": "chunk @0x10ab: payload checksum mismatch"' "$TMP/out"; then
	ok "damaged: --json carries corrupt and the problem with its offset"
else
	not_ok "damaged: --json carries corrupt and the problem with its offset"
fi
run "$C/crc-mismatch-payload-zstd.ptz" --csv -
if [ "$rc" -eq 1 ] && head -1 "$TMP/out" | grep -q '^view,thread,path,' && [ "$(wc -l <"$TMP/out")" -gt 1 ]; then
	ok "damaged: --csv still written"
else
	not_ok "damaged: --csv still written"
fi
run info "$C/crc-mismatch-payload-zstd.ptz"
if [ "$rc" -eq 1 ] && grep -q '^problem:      chunk @0x10ab: payload checksum mismatch' "$TMP/out"; then
	ok "damaged: info lists the problem"
else
	not_ok "damaged: info lists the problem"
fi

# ---- torn tail (a crashed writer): report, warning naming the offset, exit 0
torn() {
	local f=$1 msg=$2
	local p=$C/$f
	run "$p"
	local why=()
	[ "$rc" -eq 0 ] || why+=("exit status $rc, expected 0")
	grep -q '^process corrupt-gen (pid 4242)' "$TMP/out" || why+=("no report on stdout")
	grep -qF "ptanalyze: $p: warning: $msg" "$TMP/err" || why+=("stderr lacks 'ptanalyze: $p: warning: $msg'")
	grep -q ': error: ' "$TMP/err" && why+=("an error for a torn tail")
	if [ ${#why[@]} -eq 0 ]; then ok "torn tail: $f"; else not_ok "torn tail: $f" "${why[@]}"; fi
}
torn trunc-payload.ptz "torn tail @0x12b5: chunk needs 97 bytes, 80 remain"
torn trailing-partial.ptz "torn tail @0x136d: 30 bytes, less than a chunk header"
torn trunc-chunk-header.ptz "torn tail @0x1270: 20 bytes, less than a chunk header"
torn overlong-length-last.ptz "torn tail @0x1316: chunk needs 1048640 bytes"
run "$C/trunc-payload.ptz" --json -
if [ "$rc" -eq 0 ] && grep -q '"torn_tail": true' "$TMP/out" && grep -q '"corrupt": false' "$TMP/out"; then
	ok "torn tail: --json says torn_tail, not corrupt"
else
	not_ok "torn tail: --json says torn_tail, not corrupt"
fi

# ---- clean traces: exit 0, nothing on stderr
for f in "$C/valid.ptz" "$S"; do
	run "$f"
	if [ "$rc" -eq 0 ] && [ ! -s "$TMP/err" ] && grep -q '^process ' "$TMP/out"; then
		ok "clean: $(basename "$f")"
	else
		not_ok "clean: $(basename "$f")"
	fi
done

# ---- losses: rows open during a loss are flagged '!'
run "$S"
why=()
grep -q '^rows marked ! were open while records were lost' "$TMP/out" || why+=("no note on '!'")
grep -q '^!lossy ' "$TMP/out" || why+=("row lossy not flagged")
grep -q '^  !B ' "$TMP/out" || why+=("row lossy;B not flagged")
[ "$(grep -c '^ *!' "$TMP/out")" -eq 2 ] || why+=("$(grep -c '^ *!' "$TMP/out") rows flagged, expected 2")
if [ ${#why[@]} -eq 0 ]; then ok "losses: tree rows flagged"; else not_ok "losses: tree rows flagged" "${why[@]}"; fi
run "$S" --flat
why=()
grep -q '^!lossy ' "$TMP/out" || why+=("flat lossy not flagged")
grep -q '^!B ' "$TMP/out" || why+=("flat B not flagged")
[ "$(grep -c '^ *!' "$TMP/out")" -eq 2 ] || why+=("$(grep -c '^ *!' "$TMP/out") rows flagged, expected 2")
if [ ${#why[@]} -eq 0 ]; then ok "losses: flat rows flagged"; else not_ok "losses: flat rows flagged" "${why[@]}"; fi
run "$S" --thread 2
if [ "$rc" -eq 0 ] && ! grep -q '^ *!' "$TMP/out"; then ok "losses: no flag on a thread without losses"; else not_ok "losses: no flag on a thread without losses"; fi

# ---- output options
run report "$S"
cp "$TMP/out" "$TMP/report1"
run "$S" --report
if cmp -s "$TMP/out" "$TMP/report1"; then ok "'report TRACE' = 'TRACE --report'"; else not_ok "'report TRACE' = 'TRACE --report'"; fi
run "$S" --csv "$TMP/x.csv" --json "$TMP/x.json"
if [ "$rc" -eq 0 ] && grep -q '^process ' "$TMP/out" && head -1 "$TMP/x.csv" | grep -q '^view,' &&
	grep -q '"schema": "ptanalyze-report/1"' "$TMP/x.json"; then
	ok "--csv FILE --json FILE: both written, report on stdout"
else
	not_ok "--csv FILE --json FILE: both written, report on stdout"
fi
run "$S" --csv "$TMP/nosuchdir/x.csv"
if [ "$rc" -eq 1 ] && grep -q "^ptanalyze: $TMP/nosuchdir/x.csv: cannot write CSV" "$TMP/err"; then
	ok "--csv to an unwritable path: exit 1"
else
	not_ok "--csv to an unwritable path: exit 1"
fi
run "$S" --csv - --json "$TMP/x2.json"
if [ "$rc" -eq 0 ] && head -1 "$TMP/out" | grep -q '^view,' && ! grep -q '^process ' "$TMP/out" && [ -s "$TMP/x2.json" ]; then
	ok "--csv - : no text report mixed into stdout"
else
	not_ok "--csv - : no text report mixed into stdout"
fi
run "$S" --thread 1 --flat --sort name
if [ "$rc" -eq 0 ] && grep -q '^Sections by name.*(thread 1), sorted by name;' "$TMP/out" &&
	[ "$(grep -c '^ *!\?[A-Za-z]' "$TMP/out")" -ge 4 ] && ! grep -q '^kern' "$TMP/out"; then
	ok "--thread 1 --flat --sort name"
else
	not_ok "--thread 1 --flat --sort name"
fi

# ---- a --since/--until window that misses every event: exit 1 and a message, no empty outputs
# (small.ptz's events lie from 0 to 8 us after its start)
for c in "report $S --since 1" "report $S --since 0.000009 --until 2" "report $S --csv $TMP/w.csv --since 1" \
	"export --perfetto $TMP/w.pftrace $S --since 1" "export --chrome $TMP/w.json $S --since 1" \
	"compare $S $S --since 1" "suggest $S --since 1"; do
	rm -f "$TMP/w.csv" "$TMP/w.pftrace" "$TMP/w.json"
	run $c
	why=()
	[ "$rc" -eq 1 ] || why+=("exit status $rc, expected 1")
	grep -q "^ptanalyze: $S: the window (--since [0-9.e-]* s.*) starts after the last event: the trace's events lie from 0 s to 8e-06 s after its start; nothing to show" "$TMP/err" ||
		why+=("no message naming the window and the events")
	[ -e "$TMP/w.csv" ] || [ -e "$TMP/w.pftrace" ] || [ -e "$TMP/w.json" ] && why+=("an empty output was written")
	if [ ${#why[@]} -eq 0 ]; then ok "window past the end: $c"; else not_ok "window past the end: $c" "${why[@]}"; fi
done
# a window holding events still reports them, and one inside the trace's span never errs
run "$S" --since 0.000001 --until 0.000007
if [ "$rc" -eq 0 ] && ! grep -q "nothing to show" "$TMP/err"; then ok "window inside the events: exit 0"; else not_ok "window inside the events: exit 0"; fi

echo "1..$n"
[ "$failed" -eq 0 ]
