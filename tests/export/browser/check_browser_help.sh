#!/usr/bin/env bash
# tests/export/browser/check_browser_help.sh CHECK_SPEEDSCOPE_PY - what
# export-browser says when it cannot run: PTZ_SKIP_BROWSER=1 makes it a SKIP
# (exit 77) without touching Chromium or npm; an `npm ci` failing the way
# it does behind a TLS-intercepting proxy (SELF_SIGNED_CERT_IN_CHAIN, from a
# fake npm first on PATH) fails as root or in CI with both fixes (the
# proxy's CA into the system store, NODE_EXTRA_CA_CERTS / npm's cafile)
# and the way to skip. TAP output.
set -u
check=$1
tmp=$(mktemp -d) n=0 failed=0
trap 'rm -rf "$tmp"' EXIT
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=1; echo "not ok $n - $1"; }

# no PTANALYZE, BUILD_ROOT or OUT_DIR that exist: a skip must not need them
out=$(PTZ_SKIP_BROWSER=1 python3 "$check" /nonexistent/ptanalyze "$tmp/b" "$tmp/o" 2>&1)
rc=$?
if [ $rc -eq 77 ] && grep -q '^SKIP: PTZ_SKIP_BROWSER' <<<"$out" && [ ! -e "$tmp/b/speedscope" ]; then
	ok "PTZ_SKIP_BROWSER=1: SKIP, exit 77, nothing installed"
else
	not_ok "PTZ_SKIP_BROWSER=1: exit $rc, output: $out"
fi

# a fake chromium (found, never run: npm fails first) and a fake npm failing as behind a proxy
mkdir -p "$tmp/bin" "$tmp/b"
printf '#!/bin/sh\nexit 0\n' >"$tmp/bin/chromium-headless-shell"
cat >"$tmp/bin/npm" <<'NPM'
#!/bin/sh
echo "npm ERR! code SELF_SIGNED_CERT_IN_CHAIN" >&2
echo "npm ERR! errno SELF_SIGNED_CERT_IN_CHAIN" >&2
echo "npm ERR! request to https://registry.npmjs.org/speedscope failed, reason: self-signed certificate in certificate chain" >&2
exit 1
NPM
chmod +x "$tmp/bin/chromium-headless-shell" "$tmp/bin/npm"
out=$(PATH="$tmp/bin:$PATH" CI=true PTZ_SKIP_BROWSER= python3 "$check" /nonexistent/ptanalyze "$tmp/b" "$tmp/o" 2>&1)
rc=$?
if [ $rc -eq 1 ] && grep -q SELF_SIGNED_CERT_IN_CHAIN <<<"$out"; then
	ok "npm ci behind a proxy (CI=true): fails, npm's error shown"
else
	not_ok "npm ci behind a proxy (CI=true): exit $rc, output: $out"
fi
for want in 'update-ca-certificates' '/usr/local/share/ca-certificates' 'NODE_EXTRA_CA_CERTS' 'cafile' \
	'PTZ_SKIP_BROWSER=1'; do
	if grep -qF -- "$want" <<<"$out"; then
		ok "the failure says '$want'"
	else
		not_ok "the failure does not say '$want'; it said: $out"
	fi
done
echo "1..$n"
exit $failed
