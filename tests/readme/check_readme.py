#!/usr/bin/env python3
"""tests/readme/check_readme.py README BUILD_DIR SOURCE_DIR - the README works as written.

Every fenced code block of the README is taken, in order:
  - a block right after the line `<!-- readme-test: file NAME -->` is written,
    unchanged, to NAME in a new temporary directory (the README's app.c is a
    whole program: a newcomer copies it as is);
  - every line of a ```sh block is a command: it runs with bash, in that
    temporary directory, against the installed ptz (ptanalyze and ptz.pc from
    the README's own `meson install -C build && ldconfig`, which runs first),
    and must exit 0 (or a status listed in EXIT_OK);
  - no file is written by two kinds of output option (--json and --chrome);
  - any other block, and any command that cannot run in a test, must be
    listed in NOT_RUN below with the reason; a listed block or command the
    README no longer has fails the test (the list cannot go stale).
The only changes made to a command are ADAPTED's (the README's `build`
directory is this build directory) and PYTHON's: a command that starts with
`python3 ` runs with the interpreter this test runs under, the one meson
built and installed the `ptz` module for (/usr/bin/python3 on Debian; a
`python3` first on PATH, such as a pyenv one, would not see the install). Root only (the install is real, as in
CI); otherwise exit 77 (SKIP). Output: TAP lines, exit status 0, 1 or 77.
"""
import fcntl
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77

# Blocks (by their first line) and commands that are not run, and why.
NOT_RUN = {
    "./ptz.sh demo": "rebuilds build/ (meson setup --reconfigure, ninja) while this test runs from it; its steps "
                     "are the examples test's and the commands below",
    "./ptz.sh test": "runs this test (it is the test suite)",
    "uint32_t gemm = pt_intern(r, \"gemm\");": "a GPU fragment: needs the CUDA toolkit, cuBLAS and a stream "
                                               "(tests/gpu covers pt_gpu_begin/pt_gpu_end with a fake runtime)",
}
# Commands whose documented exit status is not always 0.
EXIT_OK = {
    "ptanalyze compare run.ptz new.ptz --fail-on-regression": {0, 3},  # 3 = a path regressed (run to run noise)
    "ptanalyze compare --base run.ptz --base run2.ptz --new new.ptz --new new2.ptz --fail-on-regression": {0, 3},
}
# The README is run from the source tree with its build directory `build`;
# here the install runs from this build directory, whatever its name.
ADAPTED = {
    "meson install -C build && ldconfig": lambda build: f"meson install -C {build} --no-rebuild && ldconfig",
}

# `python3 ...` commands: this interpreter (see the docstring).
PYTHON = sys.executable

n = 0
failed = 0


def check(desc, ok, detail=""):
    global n, failed
    n += 1
    print(f"{'ok' if ok else 'not ok'} {n} - {desc}", flush=True)
    if not ok:
        failed += 1
        for line in str(detail).splitlines()[-30:]:
            print(f"#   {line}")
    return ok


def blocks(text):
    """(language, marker file or None, lines) for each fenced block."""
    out = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^```(\w*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        marker = None
        if i > 0:
            mm = re.match(r"^<!-- readme-test: file (\S+) -->$", lines[i - 1].strip())
            marker = mm.group(1) if mm else None
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        out.append((m.group(1), marker, lines[i + 1:j]))
        i = j + 1
    return out


def commands(lines):
    """The commands of a sh block: continuation lines joined, blank lines dropped."""
    cmds, cur = [], ""
    for line in lines:
        if line.rstrip().endswith("\\"):
            cur += line.rstrip()[:-1] + " "
            continue
        cur += line
        if cur.strip():
            cmds.append(cur.strip())
        cur = ""
    return cmds


def strip_comment(cmd):
    """The command without its trailing '# ...' comment (README comments follow two or more spaces)."""
    return re.split(r"\s{2,}#\s", cmd, maxsplit=1)[0].strip()


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    readme, build, src = (os.path.abspath(a) for a in sys.argv[1:])
    if os.geteuid() != 0:
        print("1..0 # SKIP not root: the README's `meson install -C build && ldconfig` installs into /usr/local "
              "(run as root, as CI does)")
        return SKIP
    text = open(readme).read()
    seen = set()
    work = tempfile.mkdtemp(prefix="ptz-readme-")
    env = dict(os.environ)
    for k in ("PKG_CONFIG_PATH", "PKG_CONFIG_LIBDIR", "LD_LIBRARY_PATH", "PTZ_TRACE"):
        env.pop(k, None)
    # one real install at a time (tests/install/check_install.sh takes the same lock)
    lock = open("/tmp/ptz-install-test.lock", "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        for lang, marker, lines in blocks(text):
            first = lines[0].strip() if lines else ""
            if marker:
                with open(os.path.join(work, marker), "w") as f:
                    f.write("\n".join(lines) + "\n")
                check(f"```{lang} block '{first}' written to {marker}", True)
                continue
            if first in NOT_RUN:
                seen.add(first)
                print(f"# not compiled: ```{lang} block '{first}': {NOT_RUN[first]}")
                continue
            if lang != "sh":
                check(f"```{lang} block '{first}' is a file (readme-test marker) or listed in NOT_RUN", False,
                      "\n".join(lines))
                continue
            for cmd in commands(lines):
                bare = strip_comment(cmd)
                if bare in NOT_RUN:
                    seen.add(bare)
                    print(f"# not run: {bare}: {NOT_RUN[bare]}")
                    continue
                run, cwd = cmd, work
                if run.startswith("python3 "):
                    run = PYTHON + run[len("python3"):]
                if bare in ADAPTED:
                    seen.add(bare)
                    run, cwd = ADAPTED[bare](build), src
                want = EXIT_OK.get(bare, {0})
                seen.update([bare] if bare in EXIT_OK else [])
                try:
                    p = subprocess.run(["bash", "-c", run], cwd=cwd, env=env, stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, timeout=300)
                    rc, out = p.returncode, p.stdout.decode(errors="replace")
                except subprocess.TimeoutExpired:
                    rc, out = "timeout", ""
                check(f"$ {bare}" + ("" if want == {0} else f" (exit {rc}, any of {sorted(want)})"), rc in want,
                      f"exit {rc}; output:\n{out}")
        # one file, one meaning: no output written by two kinds of option (run.json was both the
        # report's JSON and the Chrome export)
        writers = {}
        for lang, marker, lines in blocks(text):
            if lang == "sh" and not marker:
                for cmd in commands(lines):
                    for opt, path in re.findall(r"(--(?:csv|json|perfetto|chrome|folded))\s+(\S+)", strip_comment(cmd)):
                        if path != "-":
                            writers.setdefault(path, set()).add(opt)
        shared = {p: sorted(o) for p, o in writers.items() if len(o) > 1}
        check("no output file is written by two kinds of output option", not shared, shared)
        stale = (set(NOT_RUN) | set(EXIT_OK) | set(ADAPTED)) - seen
        check("every NOT_RUN, EXIT_OK and ADAPTED entry is in the README", not stale, "\n".join(sorted(stale)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"1..{n}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
