"""tests/export/perfetto/tap.py - TAP output shared by the export checkers
(check_export.py, tests/export/gpu/check_gpu_export.py): one line per check,
the diagnostic of a failed one as comments, then the plan and an exit code."""

n_test = 0
n_fail = 0


def tap(ok, name, diag=""):
    """Prints check number n as ok / not ok; returns ok."""
    global n_test, n_fail
    n_test += 1
    if not ok:
        n_fail += 1
    print(f"{'ok' if ok else 'not ok'} {n_test} - {name}")
    if diag and not ok:
        for line in str(diag).splitlines()[:40]:
            print(f"# {line}")
    return ok


def finish():
    """Prints the plan and a summary; returns the exit code (1 if a check failed)."""
    print(f"1..{n_test}")
    print(f"# {n_test - n_fail} passed, {n_fail} failed")
    return 1 if n_fail else 0
