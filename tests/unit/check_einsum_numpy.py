#!/usr/bin/python3
"""Check pt_flops_einsum() against numpy.einsum_path's naive FLOP count.

Usage: check_einsum_numpy.py FLOPS_CLI   (meson test 'flops-vs-numpy')

numpy 1.24 (Debian 12, numpy/core/einsumfunc.py, einsum_path) computes,
before it looks for a path:

    indices = set(input_subscripts.replace(',', ''))
    inner_product = (sum(len(x) for x in input_sets) - len(indices)) > 0
    naive_cost = _flop_count(indices, inner_product, len(input_list), dimension_dict)

and _flop_count(idx, inner, num_terms, sizes) returns
product(sizes[i] for i in idx) * (max(1, num_terms - 1) + (1 if inner else 0)).
The report prints it as "Naive FLOP count:  %.3e". This script takes the
exact value from einsum_path itself: it wraps einsumfunc._flop_count and
keeps the first call's result (with optimize=False that call is the naive
cost; the later ones price the single contraction), and it checks the
printed report too ('%.3e' of our value equals the printed field, and for
counts below 10^4, which %.3e prints exactly, the field parsed back to an
int equals our value).

Each spec runs with fixed sizes, random sizes (random arrays, fixed seed) and
huge sizes (zero-stride views from numpy.broadcast_to: einsum_path reads
only shapes) whose counts exceed 2^64, where pt_flops_einsum() must
saturate at 2^64 - 1. Specs numpy rejects must give 0.

Known, documented differences, not checked: numpy broadcasts a size-1
dimension against a larger one for the same index (ptz: inconsistent sizes,
0) and accepts "..." (ptz: malformed, 0).

Prints one line per failure and "N passed, N failed"; exits 1 on any
failure, 77 (meson: skipped) if numpy cannot be imported.
"""
import re
import subprocess
import sys

try:
    import numpy as np
    from numpy.core import einsumfunc
except ImportError as e:  # pragma: no cover - depends on the host
    print("numpy unavailable (%s): skipped" % e)
    sys.exit(77)

UINT64_MAX = 2**64 - 1

# Specs: the required ones first, then implicit outputs, scalars, upper
# case, spaces and longer chains.
SPECS = [
    "ij,ij->ij",
    "ij->ji",
    "ii->i",
    "ik,ijk,jk->",
    "ij,jk->ik",
    "ijk,ikl->ijl",
    "i,i->",
    "ij,jk,kl->il",
    "ab,bc->",
    "ij,jk",  # implicit output: ik
    "i,j",  # implicit output: ij (outer product)
    "ij,ij",  # implicit output: ij
    "ii",  # implicit output: empty (trace)
    "ba",  # implicit output: ab (a transpose)
    "ijk,ikl",  # implicit output: jl
    "ij->",
    "ii->",
    "i,j->ij",
    "iij,j->i",
    "ijk->kji",
    "i,i,i->i",
    "ab,bc,cd,de->ae",
    "Ab,bC->AC",
    "aA->",
    " ij , jk -> ik ",
    "->",
    ",->",
]

# (spec, shapes) numpy.einsum_path rejects with ValueError; ptz must say 0.
REJECTED = [
    ("ij,jk->ix", [(2, 3), (3, 4)]),  # output index in no input
    ("ij-ik", [(2, 3)]),
    ("ij,jk>ik", [(2, 3), (3, 4)]),
    ("ij->i->j", [(2, 3)]),
    ("i1->i", [(2, 3)]),
    ("ij,jk->ik", [(2, 3), (4, 5)]),  # j = 3 and 4
    ("ii->i", [(2, 3)]),  # i = 2 and 3
]


def input_terms(spec):
    """The input subscripts of spec, spaces removed, one string per operand."""
    return spec.replace(" ", "").split("->")[0].split(",")


def make_arrays(terms, sizes, rng):
    arrays = []
    for term in terms:
        shape = tuple(sizes[c] for c in term)
        n = 1
        for d in shape:
            n *= d
        if n <= 4096:
            arrays.append(rng.standard_normal(shape))
        else:  # einsum_path reads only the shape: a zero-stride int8 view, no memory
            arrays.append(np.broadcast_to(np.zeros((), dtype=np.int8), shape))
    return arrays


_naive_calls = []
_real_flop_count = einsumfunc._flop_count


def _recording_flop_count(idx_contraction, inner, num_terms, size_dictionary):
    cost = _real_flop_count(idx_contraction, inner, num_terms, size_dictionary)
    _naive_calls.append(cost)
    return cost


einsumfunc._flop_count = _recording_flop_count  # einsum_path looks it up at call time


def numpy_naive(spec, arrays):
    """(exact naive cost as einsum_path computed it, the report's printed field)."""
    del _naive_calls[:]
    _, report = np.einsum_path(spec, *arrays, optimize=False)
    m = re.search(r"Naive FLOP count:\s*(\S+)", report)
    if not m or not _naive_calls:
        raise RuntimeError("einsum_path report without a naive FLOP count:\n" + report)
    return _naive_calls[0], m.group(1)


def run_cli(cli, spec, dims):
    out = subprocess.run([cli, spec] + [str(d) for d in dims], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True, check=False)
    if out.returncode != 0:
        raise RuntimeError("flops-cli %r %s: exit %d: %s" % (spec, dims, out.returncode, out.stderr.strip()))
    return int(out.stdout)


def size_maps(letters, rng):
    """Fixed, random and huge size assignments for the distinct letters."""
    fixed = {c: 2 + i for i, c in enumerate(letters)}
    yield "fixed", fixed
    for t in range(4):
        yield "random%d" % t, {c: int(rng.integers(1, 8)) for c in letters}
    # counts near and past 2^64 (e.g. 4 indices of 2^20 = 2^80)
    yield "huge", {c: 2**20 for c in letters}
    yield "huge-mixed", {c: (2**31 if i % 2 == 0 else 3) for i, c in enumerate(letters)}


def fits_numpy(terms, sizes):
    """numpy arrays, even zero-stride views, hold fewer than 2^63 bytes (int8 here)."""
    for term in terms:
        n = 1
        for c in term:
            n *= sizes[c]
        if n >= 2**62:
            return False
    return True


def main():
    if len(sys.argv) != 2:
        print("usage: check_einsum_numpy.py FLOPS_CLI", file=sys.stderr)
        return 2
    cli = sys.argv[1]
    rng = np.random.default_rng(20240611)
    passed = failed = 0

    def report(ok, what):
        nonlocal passed, failed
        if ok:
            passed += 1
        else:
            failed += 1
            print("FAIL " + what)

    for spec in SPECS:
        terms = input_terms(spec)
        letters = sorted(set("".join(terms)))
        for label, sizes in size_maps(letters, rng):
            if not fits_numpy(terms, sizes):
                continue
            arrays = make_arrays(terms, sizes, rng)
            dims = [sizes[c] for t in terms for c in t]
            exact, printed = numpy_naive(spec, arrays)
            ours = run_cli(cli, spec, dims)
            want = min(exact, UINT64_MAX)
            what = "%r %s dims=%s: numpy naive %d (printed %s), ptz %d" % (spec, label, dims, exact, printed, ours)
            report(ours == want, what)
            # the printed report, as a user would read it
            if exact <= UINT64_MAX:
                report("%.3e" % ours == printed, what + " [printed field]")
                if ours < 10**4:
                    report(int(float(printed)) == ours, what + " [printed field as int]")
            else:
                report(float(printed) > UINT64_MAX and ours == UINT64_MAX, what + " [saturation]")

    for spec, shapes in REJECTED:
        arrays = [np.zeros(s) for s in shapes]
        try:
            np.einsum_path(spec, *arrays, optimize=False)
            report(False, "%r: numpy accepted a spec listed as rejected" % spec)
            continue
        except ValueError:
            pass
        dims = [d for s in shapes for d in s]
        ours = run_cli(cli, spec, dims)
        report(ours == 0, "%r dims=%s: numpy rejects it, ptz %d (want 0)" % (spec, dims, ours))

    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
