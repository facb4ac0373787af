#!/usr/bin/env python3
"""tests/export/browser/check_html.py PTANALYZE GEN_HTML_TRACE GEN_GPU_TRACE BUILD_ROOT OUT_DIR - the HTML page check.

Writes `ptanalyze TRACE --report --html` pages of the example workloads
(BUILD_ROOT/examples/{led_optimizer,compress_corpus} --small) and of
gen_html_trace's traces (names that are markup), and `ptanalyze compare
--html` of a run against a slower one, and a GPU trace's page (gen_gpu_trace:
its GPU columns and time breakdown in the table), opens each from file:// in headless
Chromium (Debian's chromium-headless-shell), and checks:
  - no console message at all (an exception in the page script is one), and
    every section of the page rendered;
  - no network request: Chromium's net log of the page holds no URL other
    than the page's own (a control page that requests http://127.0.0.1:9/
    shows the log does record one);
  - every number in the call-tree table (#expand=all&columns=all: every row,
    every column) equals the JSON report's (`--json` of the same run) within
    the rounding of its displayed digits, units parsed back (ns/us/ms/s,
    B/KiB/MiB, %, GB/s, FLOP with SI prefixes); every name cell is the row's
    name as text;
  - a section named "<script>alert(1)</script>" is text in a table cell, and
    the page has no element that a name could have made (no extra <script>,
    no <img>);
  - the comparison: every row's verdict, change and figures against
    `compare --json`, the slowed section a regression, and `--folded-diff`
    against the same JSON; pixels of the regression colour in its screenshot
    (the flame graph and the interval chart colour frames by verdict);
  - screenshots at 1280x800, at a phone's 390x844 and in dark mode are not
    blank (and the dark one is dark), and the page prints to PDF;
  - usage errors of --html and --folded-diff (exit 2).
Screenshots stay in OUT_DIR (report-1280.png is the README's figure).

Without Chromium: as check_speedscope.py (installed as root or in CI, where a
failed install fails); PTZ_SKIP_BROWSER=1, or no Chromium for a plain user,
runs the checks that need no browser (usage errors, escaping in the file,
the regression verdict, --folded-diff) and exits 77 if they pass, 1 if not.
"""
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_speedscope as ss  # noqa: E402  (Chromium install, PNG decoding, TAP helpers)

SKIP = 77
check = ss.check
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--hide-scrollbars", "--virtual-time-budget=10000",
         "--run-all-compositor-stages-before-draw"]


def chromium(chrome, work, url, *extra, size="1280,800"):
    prof = tempfile.mkdtemp(prefix="chrome-profile-", dir=work)
    try:
        p = subprocess.run([chrome, *FLAGS, f"--window-size={size}", f"--user-data-dir={prof}",
                            "--enable-logging=stderr", "--v=0", *extra, url],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    finally:
        shutil.rmtree(prof, ignore_errors=True)
    console = re.findall(r':CONSOLE[^\]]*\] "(.*)", source: (\S+)', p.stderr.decode(errors="replace"))
    return p, console


class Dom(html.parser.HTMLParser):
    """Rows of the page's tables (<tr data-*> with their <td data-key> texts), and tags counted."""

    def __init__(self):
        super().__init__()
        self.rows, self.tags, self.cell, self.h2 = [], {}, None, []
        self.in_h2 = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if tag == "tr" and ("data-path" in a or "data-row" in a):
            self.rows.append({"attrs": a, "cells": {}})
        elif tag == "td" and self.rows and "data-key" in a:
            self.cell = [a["data-key"], ""]
            self.rows[-1]["cells"][a["data-key"]] = self.cell
        elif tag == "h2":
            self.in_h2 = True
            self.h2.append("")

    def handle_endtag(self, tag):
        if tag == "td":
            self.cell = None
        elif tag == "h2":
            self.in_h2 = False

    def handle_data(self, d):
        if self.cell is not None:
            self.cell[1] += d
        if self.in_h2:
            self.h2[-1] += d


# ---- numbers shown with units, parsed back ----
MULT = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9, "B": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3,
        "TiB": 1024 ** 4, "GB/s": 1, "GFLOP/s": 1, "FLOP/B": 1, "%": 0.01, "\u00d7": 1, "": 1}
SI = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}


def parse_shown(text):
    """(value, half of the last shown digit's step) of a cell; None for '-' or empty."""
    t = text.strip()
    if t in ("-", ""):
        return None
    m = re.fullmatch(r"([+-]?)(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?\s*(.*)", t)
    if not m:
        raise ValueError(f"not a number with a unit: {text!r}")
    sign, ip, fp, ex, unit = m.groups()
    if unit in MULT:
        mult = MULT[unit]
    elif unit.endswith("FLOP") and unit[:-4] in SI:
        mult = SI[unit[:-4]]
    else:
        raise ValueError(f"unknown unit {unit!r} in {text!r}")
    v = float(f"{ip}.{fp or 0}e{ex or 0}") * (-1 if sign == "-" else 1)
    step = 10.0 ** (int(ex or 0) - len(fp or ""))
    return v * mult, 0.51 * step * mult


def same(shown, want):
    """The cell's text against the JSON value (None = null)."""
    if isinstance(want, bool):
        return shown.strip() == ("yes" if want else "")
    got = parse_shown(shown)
    if want is None:
        return got is None
    if got is None:
        return False
    v, tol = got
    return abs(v - float(want)) <= tol + 1e-9 * abs(float(want))


def row_value(r, key, start_ns):
    if key.startswith("time."):
        return (r.get("time") or {}).get(key[5:])
    if key == "first_start_ns":
        return r["first_start_ns"] - start_ns
    return r.get(key)


def sh(args, **kw):
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300, **kw)


def page_checks(chrome, work, page, label, want_h2):
    """Console, sections, network: returns the parsed DOM of page#expand=all&columns=all."""
    url = "file://" + page + "#expand=all&columns=all"
    netlog = os.path.join(work, os.path.basename(page) + ".netlog.json")
    p, console = chromium(chrome, work, url, "--dump-dom", f"--log-net-log={netlog}")
    dom_text = p.stdout.decode(errors="replace")
    check(f"{label}: rendered (exit {p.returncode})", p.returncode == 0 and 'id="ptz-error"' not in dom_text,
          p.stderr.decode(errors="replace")[-1500:])
    check(f"{label}: no console message", not console, "\n".join(f"{m} ({s})" for m, s in console))
    dom = Dom()
    dom.feed(dom_text)
    check(f"{label}: sections {want_h2}", dom.h2 == want_h2, dom.h2)
    try:
        log = open(netlog, encoding="utf-8", errors="replace").read()
    except OSError as ex:
        log = ""
        check(f"{label}: net log written", False, ex)
    urls = sorted(set(re.findall(r'"url":"([^"]*)"', log)))
    foreign = [u for u in urls if not (u.startswith("file://") or u.startswith("data:") or u.startswith("about:")
                                       or u.startswith("chrome"))]
    check(f"{label}: no network request ({len(urls)} URLs in the net log)", not foreign, foreign)
    return dom, dom_text


def report_table_checks(dom, rep, label):
    start = rep["trace"]["start_ns"]
    want = {}
    for r in rep["tree"]:
        want[(tuple(r["path"]), r.get("domain", ""))] = r
    rows = [x for x in dom.rows if x["attrs"].get("data-view") == "tree"]
    check(f"{label}: every call path in the table ({len(rows)} rows, {len(want)} in the JSON)",
          len(rows) == len(want) and len(want) > 0)
    bad, cells, keys = [], 0, set()
    for x in rows:
        key = (tuple(json.loads(x["attrs"]["data-path"])), x["attrs"].get("data-domain", ""))
        r = want.get(key)
        if r is None:
            bad.append(f"row {key} not in the JSON")
            continue
        for k, (_, text) in x["cells"].items():
            if k in ("name", "domain"):
                if text.lstrip("\u25b8\u25be") != r[k]:
                    bad.append(f"{key}: {k} cell {text!r}")
                continue
            keys.add(k)
            cells += 1
            try:
                ok = same(text, row_value(r, k, start))
            except ValueError as ex:
                ok, text = False, f"{text!r}: {ex}"
            if not ok:
                bad.append(f"{';'.join(key[0])} {k}: shown {text!r}, JSON {row_value(r, k, start)!r}")
    check(f"{label}: {cells} numbers in {len(keys)} columns equal the JSON report's", not bad and cells > 0, "\n".join(bad))
    return keys


def shot_checks(chrome, work, page, out, name, size, extra=(), dark=False, want_colour=None):
    shot = os.path.join(out, name)
    p, _ = chromium(chrome, work, "file://" + page, f"--screenshot={shot}", *extra, size=size)
    if not check(f"{name}: screenshot written", p.returncode == 0 and os.path.exists(shot),
                 p.stderr.decode(errors="replace")[-800:]):
        return
    w, h, bpp, px = ss.png_pixels(shot)
    colours, lum, hits = set(), 0, 0
    n = 0
    for y in range(0, h, 2):
        r = px[y]
        for x in range(0, w * bpp, 2 * bpp):
            c = r[x:x + 3]
            colours.add(bytes(c))
            lum += (c[0] * 3 + c[1] * 6 + c[2]) / 10
            n += 1
            if want_colour and all(abs(c[i] - want_colour[i]) <= 6 for i in range(3)):
                hits += 1
    mean = lum / n
    check(f"{name}: not blank ({len(colours)} colours, mean luminance {mean:.0f})",
          (w, h) == tuple(int(v) for v in size.split(",")) and len(colours) >= 16 and (mean < 90 if dark else mean > 150))
    if want_colour:
        check(f"{name}: {hits} pixels of the regression colour", hits > 200)


def main():
    if len(sys.argv) != 6:
        print(__doc__, file=sys.stderr)
        return 2
    ana, gen, gen_gpu, build, out = (os.path.abspath(a) for a in sys.argv[1:])
    # Without a browser (PTZ_SKIP_BROWSER=1, or none to be had outside CI and root) the checks that
    # need none still run: a failure among them fails the test, else it is a SKIP.
    skip = os.environ.get("PTZ_SKIP_BROWSER", "") not in ("", "0")
    chrome = None if skip else ss.ensure_chromium()
    if not chrome and not skip:
        if ss.CI or ss.IS_ROOT:
            ss.unavailable("no chromium-headless-shell or chromium (Debian: apt-get install chromium-headless-shell)")
        print("# no chromium-headless-shell or chromium: only the checks that need no browser run", flush=True)
    os.makedirs(out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="ptz-html-", dir=out)
    try:
        # usage errors first: cheap
        t = os.path.join(work, "u.ptz")
        if check("gen_html_trace writes a trace", sh([gen, t]).returncode == 0):
            for args, why in (([ana, "suggest", t, "--html", "x.html"], "suggest --html"),
                              ([ana, "info", t, "--html", "x.html"], "info --html"),
                              ([ana, t, "--report", "--folded-diff", "x.folded"], "--folded-diff on a report"),
                              ([ana, t, "--report", "--html", t], "--html naming the trace"),
                              ([ana, t, "--report", "--html", "-", "--json", "-"], "--html - with --json -"),
                              ([ana, "export", "--chrome", "x.json", t, "--html", "y.html"], "export with --html"),
                              ([ana, "compare", t, t, "--html", "same", "--folded-diff", "same"],
                               "compare: --html and --folded-diff naming one file")):
                p = sh(args, cwd=work)
                check(f"usage error: {why} (exit 2)", p.returncode == 2 and b"usage" in p.stdout,
                      p.stdout.decode(errors="replace"))
        want_h2 = ["Summary", "Where the time goes", "GPU", "Counters over time", "Bottlenecks and suggestions",
                   "Call tree"]
        pages = []
        for name in ("led_optimizer", "compress_corpus", "gen_html_trace", "gen_gpu_trace"):
            trace = os.path.join(work, name + ".ptz")
            if name == "gen_html_trace":
                p = sh([gen, trace])
            elif name == "gen_gpu_trace":
                p = sh([gen_gpu, trace])
            else:
                exe = os.path.join(build, "examples", name)
                if not os.path.exists(exe):
                    print(f"# {name} not built: skipped")
                    continue
                p = sh([exe, "--small", "--trace", trace], cwd=work)
            if not check(f"{name} writes a trace", p.returncode == 0, p.stdout.decode(errors="replace")):
                continue
            page, js = os.path.join(work, name + ".html"), os.path.join(work, name + ".json")
            p = sh([ana, trace, "--report", "--html", page, "--json", js, "--no-progress"])
            if not check(f"{name}: ptanalyze --report --html --json", p.returncode == 0 and os.path.getsize(page) > 0,
                         p.stdout.decode(errors="replace")[-1500:]):
                continue
            pages.append(name)
            raw = open(page, encoding="utf-8").read()
            rep = json.load(open(js, encoding="utf-8"))
            if name == "gen_html_trace":
                check("markup names are escaped inside the page's JSON",
                      "<script>alert" not in raw and "<img" not in raw and "\\u003cscript\\u003ealert(1)" in raw)
            if not chrome:
                continue
            dom, dom_text = page_checks(chrome, work, page, name, want_h2)
            keys = report_table_checks(dom, rep, name)
            if name == "led_optimizer":
                check(f"{name}: work columns compared (flops, gflop_per_s)", {"flops", "gflop_per_s"} <= keys, keys)
            if name == "gen_gpu_trace":
                want = {"gpu_total_ns", "gpu_p99_ns", "occupied_ns", "time.transfer_ns", "gpu_launch_latency_min_ns"}
                check(f"{name}: GPU columns compared ({', '.join(sorted(want))})", want <= keys, keys)
            if name == "gen_html_trace":
                check("'<script>alert(1)</script>' is a table cell's text",
                      any(c[1].endswith("<script>alert(1)</script>") for x in dom.rows for c in x["cells"].values())
                      and "&lt;script&gt;alert(1)&lt;/script&gt;" in dom_text)
                parsed = Dom()
                parsed.feed(raw)
                scripts = parsed.tags.get("script", 0)
                check(f"no element made of a name ({scripts} <script> in the file, "
                      f"{dom.tags.get('script', 0)} in the DOM, {dom.tags.get('img', 0)} <img>)",
                      dom.tags.get("script", 0) == scripts and "img" not in dom.tags)
                check("the memory series is drawn (heap (bytes))", 'aria-label="heap (bytes)"' in dom_text)
                check("a counter not in bytes is drawn (queue depth)",
                      re.search(r'aria-label="queue depth \(thread \d+ [^"]*\)"', dom_text) is not None)
        if not pages:
            check("at least one page written", False)
            return 1
        if chrome:
            browser_pages(chrome, work, out, os.path.join(work, pages[0] + ".html"))
        compare_checks(ana, gen, chrome, work, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if chrome:
        print(f"# screenshots in {out}")
    print(f"{ss.n - ss.failed} passed, {ss.failed} failed")
    if ss.failed:
        return 1
    if not chrome:
        print("SKIP: the pages were not opened in a browser (PTZ_SKIP_BROWSER, or no Chromium)", flush=True)
        return SKIP
    return 0


def browser_pages(chrome, work, out, first):
    """The net log control, screenshots (1280x800, phone, dark) and printing of the page @first."""
    # the control: a page that requests something shows up in the net log
    ctl = os.path.join(work, "control.html")
    open(ctl, "w").write('<!DOCTYPE html><img src="http://127.0.0.1:9/ptz-control.png">')
    netlog = os.path.join(work, "control.netlog.json")
    chromium(chrome, work, "file://" + ctl, "--dump-dom", f"--log-net-log={netlog}")
    check("control: the net log records a page's request",
          "http://127.0.0.1:9/ptz-control.png" in open(netlog, errors="replace").read())

    shot_checks(chrome, work, first, out, "report-1280.png", "1280,800")
    shot_checks(chrome, work, first, out, "report-phone.png", "390,844")
    shot_checks(chrome, work, first, out, "report-dark.png", "1280,800", ("--blink-settings=preferredColorScheme=0",), dark=True)
    pdf = os.path.join(out, "report.pdf")
    p, _ = chromium(chrome, work, "file://" + first, f"--print-to-pdf={pdf}", "--no-pdf-header-footer")
    check("the page prints to PDF", p.returncode == 0 and os.path.exists(pdf) and os.path.getsize(pdf) > 20000,
          p.stderr.decode(errors="replace")[-800:])


def compare_checks(ana, gen, chrome, work, out):
    """compare --html/--json/--folded-diff of a run against one whose "kernel" is 1.5x slower."""
    base, new = os.path.join(work, "base.ptz"), os.path.join(work, "new.ptz")
    if check("gen_html_trace base and --slow runs", sh([gen, base]).returncode == 0 and
             sh([gen, new, "--slow"]).returncode == 0):
        page, js, fd = (os.path.join(work, "compare" + e) for e in (".html", ".json", ".folded"))
        p = sh([ana, "compare", base, new, "--html", page, "--json", js, "--folded-diff", fd, "--no-progress"])
        check("compare --html --json --folded-diff", p.returncode == 0, p.stdout.decode(errors="replace")[-1500:])
        cmp = json.load(open(js, encoding="utf-8"))
        kern = [r for r in cmp["rows"] if r["name"] == "kernel"]
        check("compare: the slowed section is a regression", kern and kern[0]["verdict"] == "regression",
              kern)
        check("compare page: markup names escaped", "<script>alert" not in open(page, encoding="utf-8").read())
        folded_diff_checks(cmp, fd)
        if not chrome:
            return
        dom, _ = page_checks(chrome, work, page, "compare",
                             ["Summary", "Regressions and improvements", "Differential flame graph of self time",
                              "All paths"])
        rows = [x for x in dom.rows if "data-row" in x["attrs"]]
        check(f"compare: every path in the table ({len(rows)} of {len(cmp['rows'])})", len(rows) == len(cmp["rows"]))
        names = {"regression": "regression", "improvement": "improvement", "within_noise": "within noise",
                 "not_significant": "not significant", "unverified": "unverified", "only_base": "only in base",
                 "only_new": "only in new", "inherited": "inherited", "more_calls": "more calls",
                 "fewer_calls": "fewer calls"}
        bad, cells = [], 0
        for x in rows:
            r = cmp["rows"][int(x["attrs"]["data-row"])]
            for k, (_, text) in x["cells"].items():
                if k == "name":
                    ok = text.lstrip("\u25b8\u25be") == r["name"]
                elif k in ("verdict", "total_verdict", "count_verdict"):
                    ok = text == names[r[k]]
                else:
                    cells += 1
                    try:
                        ok = same(text, r[k])
                    except ValueError:
                        ok = False
                if not ok:
                    bad.append(f"row {x['attrs']['data-row']} {k}: shown {text!r}, JSON {r.get(k)!r}")
        check(f"compare: verdicts, names and {cells} numbers equal the JSON's", not bad and cells > 0, "\n".join(bad))
        shot_checks(chrome, work, page, out, "compare-1280.png", "1280,2000", want_colour=(0xc5, 0x30, 0x30))


def folded_diff_checks(cmp, fd):
    # --folded-diff: one line per path with self time, the same figures as the JSON
    paths, lines = {}, {}
    for i, r in enumerate(cmp["rows"]):
        paths[i] = (paths[r["parent"]] + ";" if r["parent"] >= 0 else "") + r["name"].replace(";", ":")
    for line in open(fd, encoding="utf-8"):
        stack, b, n = line.rstrip("\n").rsplit(" ", 2)
        lines[stack] = (int(b), int(n))
    want = {paths[i]: (r["self_base_ns"], r["self_new_ns"]) for i, r in enumerate(cmp["rows"])
            if r["self_base_ns"] or r["self_new_ns"]}
    check(f"--folded-diff: {len(lines)} lines equal the JSON's self times", lines == want and lines,
          f"{lines}\n{want}")


if __name__ == "__main__":
    sys.exit(main())
