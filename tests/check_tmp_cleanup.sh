#!/bin/bash
# tests/check_tmp_cleanup.sh - a C test binary removes the directory it
# made (tests/test_util.h, tu_tmpdir) at exit, files included, and only in
# the process that made it: a forked child's exit leaves it to the parent.
# PTZ_KEEP_TEST_FILES keeps it. TAP output.
# usage: check_tmp_cleanup.sh TEST_BINARY FORKING_TEST_BINARY
set -u
plain=$1 forking=$2
base=$(mktemp -d "${TMPDIR:-/tmp}/ptz-cleanup-XXXXXX")
trap 'rm -rf "$base"' EXIT
n=0 failed=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=1; fi; }

run_in() { # DIR BINARY [VAR=VALUE...]: runs BINARY with its files under DIR
	local d=$1 bin=$2
	shift 2
	mkdir -p "$d"
	env PTZ_TEST_TMPDIR="$d" CMOCKA_MESSAGE_OUTPUT=stdout "$@" "$bin" >"$d.log" 2>&1
}

run_in "$base/plain" "$plain"
ok $? "$(basename "$plain") passes"
[ -z "$(ls -A "$base/plain")" ]
ok $? "its directory is gone at exit: $(ls -A "$base/plain" | tr '\n' ' ')"

run_in "$base/forking" "$forking"
ok $? "$(basename "$forking") passes (its children exit while the parent still uses the directory)"
[ -z "$(ls -A "$base/forking")" ]
ok $? "its directory is gone at exit: $(ls -A "$base/forking" | tr '\n' ' ')"

run_in "$base/keep" "$plain" PTZ_KEEP_TEST_FILES=1
ok $? "$(basename "$plain") passes with PTZ_KEEP_TEST_FILES=1"
kept=$(find "$base/keep" -mindepth 1 -maxdepth 1 -name 'ptz-*' -type d | wc -l)
[ "$kept" = 1 ]
ok $? "PTZ_KEEP_TEST_FILES keeps it ($kept kept)"

echo "1..$n"
exit $failed
