#!/usr/bin/env python3
"""scripts/port-sized-calls.py FILE... - port C sources from the 0.2 API to
0.3's size-versioned calls (README "API and ABI stability"), in place.

Adds the size argument to each call that still has the 0.2 arity: pt_open,
pt_stats, pt_start, pt_stop, pt_reader_next_record, pt_reader_next_records,
pt_reader_next_chunk, pt_reader_next_chunk_header, pt_reader_thread. The
size is 0 for NULL, sizeof(x) for &x, sizeof(*p) for a pointer p, and for
pt_reader_next_records the element size of its array. A heuristic on text,
not a C parser: calls it cannot size are listed as UNSURE and left alone,
and the result must be compiled and its diff read. It ported every caller
in this tree when the sizes came in (0.3.0).
"""
import re
import sys
ARITY = {'pt_open': 2, 'pt_stats': 2, 'pt_reader_next_record': 2, 'pt_reader_next_records': 3,
         'pt_reader_next_chunk': 3, 'pt_reader_next_chunk_header': 2, 'pt_reader_thread': 3,
         'pt_start': 3, 'pt_stop': 3}
pat = re.compile(r'(?<![A-Za-z0-9_])(' + '|'.join(sorted(ARITY, key=len, reverse=True)) + r')\s*\(')

def split_args(s, i):
    # s[i] is just after '('; return (list of (start,end) arg spans, index of ')')
    depth = 0; args = []; start = i; j = i
    instr = None
    while j < len(s):
        c = s[j]
        if instr:
            if c == '\\': j += 2; continue
            if c == instr: instr = None
        elif c in '"\'': instr = c
        elif c in '([{': depth += 1
        elif c in ')]}':
            if depth == 0:
                args.append((start, j)); return args, j
            depth -= 1
        elif c == ',' and depth == 0:
            args.append((start, j)); start = j + 1
        j += 1
    return None, None

def size_of(a):
    a = a.strip()
    if a in ('NULL', '0', 'nullptr'):
        return '0'
    if a.startswith('&') and re.fullmatch(r'&[A-Za-z_][\w\.\->\[\]]*', a):
        return 'sizeof(%s)' % a[1:]
    if re.fullmatch(r'[A-Za-z_][\w\.\->]*', a):
        return 'sizeof(*%s)' % a
    m = re.fullmatch(r'&([A-Za-z_][\w\.\->]*)\[([^\]]+)\]', a)
    if m:
        return 'sizeof(%s[0])' % m.group(1)
    # pointer arithmetic: buf + n
    m = re.fullmatch(r'([A-Za-z_][\w\.\->]*)\s*\+\s*.+', a)
    if m:
        return 'sizeof(*%s)' % m.group(1)
    return None

def conv(text, fname):
    out = []; pos = 0; changed = 0; unsure = []
    for m in pat.finditer(text):
        if m.start() < pos: continue
        name = m.group(1)
        args, close = split_args(text, m.end())
        if args is None: continue
        nargs = 0 if (len(args) == 1 and text[args[0][0]:args[0][1]].strip() == '') else len(args)
        if nargs != ARITY[name]:
            continue
        # skip definitions/declarations: preceded by a type on the same line
        line_start = text.rfind('\n', 0, m.start()) + 1
        prefix = text[line_start:m.start()]
        if re.search(r'(PT_API|^\s*(int|void|pt_recorder\s*\*|static|extern))\s*$', prefix) and 'return' not in prefix:
            unsure.append((fname, text.count('\n', 0, m.start()) + 1, 'decl?'))
            continue
        if name == 'pt_reader_next_records':
            last = text[args[1][0]:args[1][1]]  # the output array
            sz = size_of(last)
            if sz == '0': sz = None
            if sz and not sz.startswith('sizeof(*') and not sz.endswith('[0])'):
                sz = 'sizeof(%s[0])' % last.strip()
        else:
            last = text[args[-1][0]:args[-1][1]]
            sz = size_of(last)
        if sz is None:
            unsure.append((fname, text.count('\n', 0, m.start()) + 1, text[m.start():close + 1][:120]))
            continue
        out.append(text[pos:close]); out.append(', ' + sz); pos = close; changed += 1
    out.append(text[pos:])
    return ''.join(out), changed, unsure


def main():
    tot = 0
    for f in sys.argv[1:]:
        t = open(f).read()
        n, c, u = conv(t, f)
        for x in u:
            print('UNSURE', *x)
        if c:
            open(f, 'w').write(n)
            tot += c
            print(f, c)
    print('total', tot)


if __name__ == '__main__':
    main()
