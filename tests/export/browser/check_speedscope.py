#!/usr/bin/env python3
"""tests/export/browser/check_speedscope.py PTANALYZE BUILD_ROOT OUT_DIR - the browser check.

Loads the Chrome JSON export (and the folded export) of the example
workloads (BUILD_ROOT/examples/{led_optimizer,compress_corpus} --small) into
speedscope, running in headless Chromium, and checks:
  - the console's import line ("Importing as Trace Event Format profile";
    "Importing as collapsed stack format" for the folded file), and that
    speedscope logged nothing else while importing (its nesting warnings:
    "Tried to end ...", "... still open at end of profile");
  - the thread count in the dumped DOM ("(1/N)", N = threads with sections)
    and the process name in the profile title;
  - a screenshot (1600x900) that is not blank: decoded here (zlib + PNG
    filters), it must hold many colours, and flame-graph frames (saturated
    pixels), not only the toolbar. Screenshots stay in OUT_DIR.

Tools: Debian's chromium-headless-shell (or chromium), and speedscope from
npm, installed with `npm ci` from tests/export/browser/package*.json (version
pinned) into BUILD_ROOT/speedscope. When one is missing and we are root, it
is installed here (apt-get, npm ci); with CI=true a failed install fails the
check; a plain local run without root skips it (exit 77, with a message).
PTZ_SKIP_BROWSER=1 skips the check on purpose (exit 77), e.g. where
registry.npmjs.org cannot be reached; a failed `npm ci` prints how to fix it
(a TLS-intercepting proxy's CA certificate) and how to skip.

Profiles are served from a loopback HTTP server (127.0.0.1, ephemeral
port, stopped at exit) and loaded with speedscope's #profileURL=...; every
Chromium run is bounded by a timeout and uses a new, empty profile dir.
"""
import functools
import http.server
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
CI = os.environ.get("CI") == "true"
IS_ROOT = os.geteuid() == 0
SKIP = 77
# Printed when `npm ci` fails: the usual cause on a fresh root (no network, or
# a TLS-intercepting proxy: SELF_SIGNED_CERT_IN_CHAIN), its fixes, and the skip.
NPM_HELP = """\
npm ci fetches speedscope from registry.npmjs.org. Behind a TLS-intercepting proxy
(npm says SELF_SIGNED_CERT_IN_CHAIN or UNABLE_TO_GET_ISSUER_CERT_LOCALLY), trust its CA:
  cp proxy-ca.crt /usr/local/share/ca-certificates/ && update-ca-certificates
  and NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt (or: npm config set cafile proxy-ca.crt)
or skip this check: PTZ_SKIP_BROWSER=1 ./ptz.sh test   (export-browser then reports SKIP)"""

n = 0
failed = 0


def check(desc, ok, detail=""):
    global n, failed
    n += 1
    print(f"{'ok' if ok else 'FAIL'} {n} - {desc}", flush=True)
    if not ok:
        failed += 1
        for line in str(detail).splitlines()[:25]:
            print(f"#   {line}")
    return ok


def unavailable(what, hint=None):
    """A tool is missing and could not be installed: fail in CI or as root, else skip."""
    if CI or IS_ROOT:
        print(f"FAIL: {what}", flush=True)
        print(hint or "to skip this check: PTZ_SKIP_BROWSER=1 ./ptz.sh test", flush=True)
        sys.exit(1)
    print(f"SKIP: {what} (run as root, or install it: see setup.sh)", flush=True)
    sys.exit(SKIP)


def sh(args, timeout=600, **kw):
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout, **kw)


def find_chromium():
    for name in ("chromium-headless-shell", "chromium"):
        p = shutil.which(name)
        if p:
            return p
    return None


def ensure_chromium():
    path = find_chromium()
    if path or not IS_ROOT:
        return path
    print("# installing chromium-headless-shell with apt-get", flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    p = sh(["apt-get", "install", "-y", "--no-install-recommends", "chromium-headless-shell"], env=env)
    if p.returncode != 0:
        sh(["apt-get", "update"], env=env)
        p = sh(["apt-get", "install", "-y", "--no-install-recommends", "chromium-headless-shell"], env=env)
    if p.returncode != 0:
        print(p.stdout.decode(errors="replace")[-2000:])
    return find_chromium()


def ensure_speedscope(build):
    prefix = os.path.join(build, "speedscope")
    index = os.path.join(prefix, "node_modules", "speedscope", "dist", "release", "index.html")
    pinned = json.load(open(os.path.join(HERE, "package.json")))["dependencies"]["speedscope"]
    try:
        have = json.load(open(os.path.join(prefix, "node_modules", "speedscope", "package.json")))["version"]
    except (OSError, ValueError, KeyError):
        have = None
    if have == pinned and os.path.exists(index):
        return index
    npm = shutil.which("npm")
    if not npm:
        if not IS_ROOT:
            return None
        print("# installing npm with apt-get", flush=True)
        sh(["apt-get", "install", "-y", "--no-install-recommends", "npm"],
           env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
        npm = shutil.which("npm")
        if not npm:
            return None
    print(f"# npm ci speedscope {pinned} into {prefix}", flush=True)
    try:
        os.makedirs(prefix, exist_ok=True)
        for f in ("package.json", "package-lock.json"):
            shutil.copy(os.path.join(HERE, f), os.path.join(prefix, f))
        p = sh([npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"], cwd=prefix, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as ex:
        print(f"# {ex}")
        return None
    if p.returncode != 0:
        print(p.stdout.decode(errors="replace")[-2000:])
        return None
    return index if os.path.exists(index) else None


# ---- PNG (8-bit RGB/RGBA, non-interlaced, as Chromium writes it) ----

def png_pixels(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, hdr = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    w, h, depth, ctype, _, _, interlace = hdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise ValueError(f"unsupported PNG: depth {depth}, colour type {ctype}, interlace {interlace}")
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * bpp
    prev = bytearray(stride)
    rows = []
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif f == 2:
            for i in range(stride):
                line[i] = (line[i] + prev[i]) & 0xFF
        elif f == 3:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((a + prev[i]) >> 1)) & 0xFF
        elif f == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b, c = prev[i], prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pr = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[i] = (line[i] + pr) & 0xFF
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def screenshot_stats(path):
    w, h, bpp, rows = png_pixels(path)
    colours = {}
    saturated = 0
    for y in range(0, h, 2):  # every other row and column: plenty for these figures
        r = rows[y]
        for x in range(0, w * bpp, 2 * bpp):
            px = r[x:x + 3]
            colours[px] = colours.get(px, 0) + 1
            if max(px) - min(px) > 40:
                saturated += 1
    total = sum(colours.values())
    return {"size": (w, h), "colours": len(colours), "dominant": max(colours.values()) / total,
            "saturated": saturated / total}


# ---- serving and Chromium ----

class QuietHandler(http.server.SimpleHTTPRequestHandler):
    extensions_map = dict(http.server.SimpleHTTPRequestHandler.extensions_map, **{".wasm": "application/wasm"})

    def log_message(self, *a):
        pass


def serve(root):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=root))
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    return srv


CHROME_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--hide-scrollbars", "--window-size=1600,900", "--virtual-time-budget=15000",
                "--run-all-compositor-stages-before-draw"]


def chromium(chrome, work, url, *extra):
    prof = tempfile.mkdtemp(prefix="chrome-profile-", dir=work)
    try:
        p = subprocess.run([chrome, *CHROME_FLAGS, f"--user-data-dir={prof}", "--enable-logging=stderr", "--v=0",
                            *extra, url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    finally:
        shutil.rmtree(prof, ignore_errors=True)
    console = re.findall(r':CONSOLE[^\]]*\] "(.*)", source: (\S+)', p.stderr.decode(errors="replace"))
    return p, console


ALLOWED_CONSOLE = (r"^speedscope v", r"^WebGL initialized", r"^Importing as ", r"^import: [0-9.]+ ms$")


def load(chrome, work, base, profile, want_import, want_threads, want_title, shot, view="time-ordered"):
    url = f"{base}/ss/index.html#profileURL={base}/{profile}&view={view}"
    label = f"{profile} ({view})"
    p, console = chromium(chrome, work, url, "--dump-dom")
    dom = p.stdout.decode(errors="replace")
    ss = [(m, s) for m, s in console if "/ss/" in s and s.split("#")[0].endswith(".js")]  # speedscope's own
    imports = [m for m, _ in ss if m.startswith("Importing as ")]
    check(f"{label}: import line '{want_import}'", imports == [want_import],
          f"exit {p.returncode}; console:\n" + "\n".join(m for m, _ in console))
    other = [m for m, _ in ss if not any(re.search(a, m) for a in ALLOWED_CONSOLE)]
    check(f"{label}: no import or nesting warnings", not other, "\n".join(other))
    m = re.search(r"\(1/(\d+)\)", dom)
    got = int(m.group(1)) if m else (1 if "1/" not in dom and want_threads == 1 else None)
    check(f"{label}: {want_threads} thread profile(s) in the DOM", got == want_threads,
          f"found {m.group(0) if m else 'no (1/N)'}")
    if want_title:
        check(f"{label}: profile title names '{want_title}'", want_title in dom, dom[-1500:])
    p, _ = chromium(chrome, work, url, f"--screenshot={shot}")
    if not check(f"{label}: screenshot written", p.returncode == 0 and os.path.exists(shot),
                 p.stderr.decode(errors="replace")[-1500:]):
        return
    st = screenshot_stats(shot)
    check(f"{label}: screenshot not blank: {st['colours']} colours, dominant {st['dominant']:.0%}, "
          f"frames {st['saturated']:.1%} of pixels ({os.path.basename(shot)})",
          st["size"] == (1600, 900) and st["colours"] >= 8 and st["dominant"] < 0.95 and st["saturated"] > 0.01, st)


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    ana, build, out = (os.path.abspath(a) for a in sys.argv[1:])
    if os.environ.get("PTZ_SKIP_BROWSER", "") not in ("", "0"):
        print("SKIP: PTZ_SKIP_BROWSER is set: speedscope in headless Chromium not checked", flush=True)
        return SKIP
    chrome = ensure_chromium()
    if not chrome:
        unavailable("no chromium-headless-shell or chromium (Debian: apt-get install chromium-headless-shell)")
    index = ensure_speedscope(build)
    if not index:
        unavailable("speedscope could not be installed (npm ci from tests/export/browser/package-lock.json)",
                    NPM_HELP)
    os.makedirs(out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="ptz-browser-", dir=out)
    srv = None
    try:
        site = os.path.join(work, "site")
        shutil.copytree(os.path.dirname(index), os.path.join(site, "ss"))
        profiles = []
        for name in ("led_optimizer", "compress_corpus"):
            exe = os.path.join(build, "examples", name)
            if not os.path.exists(exe):
                print(f"# {name} not built: skipped")
                continue
            trace = os.path.join(work, name + ".ptz")
            p = sh([exe, "--small", "--trace", trace], cwd=work, timeout=120)
            if not check(f"{name} --small writes a trace", p.returncode == 0, p.stdout.decode(errors="replace")):
                continue
            js = os.path.join(site, name + ".json")
            fo = os.path.join(site, name + ".folded")
            p = sh([ana, "export", "--chrome", js, "--folded", fo, trace])
            if not check(f"{name}: ptanalyze export --chrome --folded", p.returncode == 0,
                         p.stdout.decode(errors="replace")):
                continue
            profiles.append(name)
        if not profiles:
            check("at least one example workload was built", False)
            return 1
        srv = serve(site)
        base = f"http://127.0.0.1:{srv.server_address[1]}"
        for name in profiles:
            ev = json.load(open(os.path.join(site, name + ".json"), encoding="utf-8"))
            tids = {e["tid"] for e in ev if e.get("ph") == "X"}
            load(chrome, work, base, name + ".json", "Importing as Trace Event Format profile", len(tids),
                 f"{name} (pid", os.path.join(out, name + ".png"))
            load(chrome, work, base, name + ".folded", "Importing as collapsed stack format", 1, None,
                 os.path.join(out, name + ".folded.png"), view="left-heavy")
            # the busiest thread alone, as a flame graph (left heavy): the README figure
            counts = {}
            for e in ev:
                if e.get("ph") == "X":
                    counts[e["tid"]] = counts.get(e["tid"], 0) + 1
            busiest = max(counts, key=counts.get)
            one = [e for e in ev if e.get("tid") == busiest or e.get("name") == "process_name"]
            with open(os.path.join(site, name + ".busiest.json"), "w", encoding="utf-8") as f:
                json.dump(one, f)
            load(chrome, work, base, name + ".busiest.json", "Importing as Trace Event Format profile", 1,
                 f"{name} (pid", os.path.join(out, name + ".flamegraph.png"), view="left-heavy")
    finally:
        if srv:
            srv.shutdown()
            srv.server_close()
        shutil.rmtree(work, ignore_errors=True)
    print(f"# screenshots in {out}")
    print(f"{n - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
