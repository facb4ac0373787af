#!/bin/sh
# scripts/update-golden.sh BUILD_DIR - regenerate tests/data/golden/ with the
# binaries built in BUILD_DIR: small.ptz from the deterministic generator
# (`test-analyzer --write-golden`), then every expected output listed in
# tests/data/golden/cases.txt from the built ptanalyze. The golden test
# (tests/analyzer/check_golden.py) only compares; this script is the one way
# the expected files change. Review `git diff tests/data/golden` afterwards:
# every changed number must be explained by the change that caused it.
# Exit: 0 done, 1 a binary is missing or a command failed, 2 usage.
set -eu
if [ $# -ne 1 ]; then
	echo "usage: $0 BUILD_DIR" >&2
	exit 2
fi
build=$(cd "$1" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
dir="$root/tests/data/golden"
gen="$build/tests/test-analyzer"
ana="$build/cli/ptanalyze"
for x in "$gen" "$ana"; do
	if [ ! -x "$x" ]; then
		echo "update-golden: $x is not built (ninja -C $1)" >&2
		exit 1
	fi
done

"$gen" --write-golden "$dir" >/dev/null
chmod 644 "$dir/small.ptz" # the writer creates traces 0600
cd "$dir"
err=$(mktemp)
trap 'rm -f "$err"' EXIT
grep -v '^[[:space:]]*\(#\|$\)' cases.txt | while read -r out args; do
	# shellcheck disable=SC2086 # args are words by design
	if ! "$ana" $args >"$out" 2>"$err"; then
		echo "update-golden: ptanalyze $args failed:" >&2
		cat "$err" >&2
		exit 1
	fi
	if [ -s "$err" ]; then
		echo "update-golden: ptanalyze $args wrote to stderr (a golden trace must be clean):" >&2
		cat "$err" >&2
		exit 1
	fi
	echo "update-golden: wrote tests/data/golden/$out"
done
