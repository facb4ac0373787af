#!/usr/bin/python3
"""ptz_mutate.py SRC.ptz OUTDIR COUNT SEED - write COUNT damaged variants of SRC.

Each variant applies one or two deterministic (seeded) mutations that keep
the checksums valid where that reaches deeper code: a raw payload edited and
re-compressed with its chunk header re-checksummed (exercises the record
decoder), a chunk header field changed and re-checksummed (the §3.2 checks,
sequence gaps, thread indexes), the file cut or its committed length moved
(§6.2, torn tails), bytes flipped anywhere, junk inserted between chunks
(resynchronization). check_spec_reader.sh compares the two readers on them.
"""
import os
import random
import sys

import xxhash
import zstandard


def le(b, o, n):
	return int.from_bytes(b[o:o + n], "little")


def put(b, o, n, v):
	b[o:o + n] = (v & ((1 << (8 * n)) - 1)).to_bytes(n, "little")


def chunks(d):
	"""(offset, header) of every chunk of an intact file."""
	out = []
	off = 4096
	end = min(le(d, 4032, 8), len(d))
	while off + 64 <= end and d[off:off + 4] == b"PTZC":
		out.append(off)
		off += 64 + le(d, off + 44, 4)
	return out


def rehash(d, off):
	put(d, off + 56, 8, xxhash.xxh3_64_intdigest(bytes(d[off:off + 56])))


def raw_payload(d, off):
	st = bytes(d[off + 64:off + 64 + le(d, off + 44, 4)])
	if d[off + 5] == 1:
		return zstandard.ZstdDecompressor().decompress(st)
	return st


def replace_payload(d, off, raw, rng):
	"""A new raw payload for chunk @off, stored or zstd; the file after it moves."""
	old = le(d, off + 44, 4)
	if rng.random() < 0.5:
		comp, st = 0, raw
	else:
		comp, st = 1, zstandard.ZstdCompressor(level=3, write_content_size=True).compress(raw)
	d[off + 5] = comp
	put(d, off + 40, 4, len(raw))
	put(d, off + 44, 4, len(st))
	put(d, off + 48, 8, xxhash.xxh3_64_intdigest(st))
	if le(d, off + 12, 4) > len(raw):
		put(d, off + 12, 4, len(raw))
	rehash(d, off)
	d[off + 64:off + 64 + old] = st
	put(d, 4032, 8, le(d, 4032, 8) + len(st) - old)


VARINT_EDGES = [b"\x80\x00", b"\xff" * 9 + b"\x01", b"\xff" * 9 + b"\x02", b"\xff" * 10 + b"\x00",
		b"\xff\xff\xff\xff\x0f", b"\x80\x80\x80\x80\x10", b"\x7f", b"\x00"]


def mutate_records(d, off, rng):
	try:
		raw = bytearray(raw_payload(d, off))
	except zstandard.ZstdError:
		return  # an earlier mutation broke this frame
	n = rng.randrange(1, 4)
	for _ in range(n):
		m = rng.randrange(8)
		p = rng.randrange(len(raw) + 1) if raw else 0
		if m == 0 and raw:
			raw[min(p, len(raw) - 1)] ^= 1 << rng.randrange(8)
		elif m == 1:
			raw[p:p] = bytes([rng.choice([0x00, 0x08, 0x09, 0x3f, 0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x7f,
						     0x80, 0x81, 0x82, 0x83, 0x84, 0xff])])
		elif m == 2:
			raw[p:p] = rng.choice(VARINT_EDGES)
		elif m == 3:
			del raw[p:p + rng.randrange(1, 6)]
		elif m == 4:  # a length-prefixed record of random kind and body
			body = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 24)))
			raw[p:p] = bytes([rng.randrange(0x40, 0x100), len(body) + rng.choice([0, 0, 0, 1, -1]) & 0x7f]) + body
		elif m == 5:  # END_TOP runs
			raw[p:p] = b"\x08\x00" * rng.randrange(1, 4)
		elif m == 6:  # deep BEGIN nesting past the 256-entry stack, then END_TOPs
			k = rng.choice([255, 256, 257, 300])
			raw[p:p] = b"\x01\x01\x05" * k + b"\x08\x01" * rng.randrange(1, 4)
		else:
			raw = raw[:p]
	replace_payload(d, off, bytes(raw), rng)


FIELDS = [(4, 1), (5, 1), (6, 2), (8, 4), (12, 4), (16, 8), (24, 8), (32, 8), (40, 4), (44, 4)]


def mutate_header(d, off, rng):
	o, n = rng.choice(FIELDS)
	v = rng.choice([0, 1, 2, 3, 0xff, 0xffffffff, (1 << 24) - 1, 1 << 24, le(d, off + o, n) + 1,
			le(d, off + o, n) - 1, rng.randrange(1 << (8 * n))])
	put(d, off + o, n, v)
	rehash(d, off)


def mutate(src, rng):
	d = bytearray(src)
	cs = chunks(d)
	for _ in range(rng.choice([1, 1, 2])):
		cs = chunks(d)
		m = rng.randrange(9)
		off = rng.choice(cs) if cs else 4096
		if m <= 2 and cs:
			mutate_records(d, off, rng)
		elif m == 3 and cs:
			mutate_header(d, off, rng)
		elif m == 4:
			del d[rng.randrange(len(d) + 1):]
		elif m == 5:
			put(d, 4032, 8, rng.choice([0, 4095, 4096, len(d) + rng.randrange(-200, 200),
						      rng.choice(cs + [len(d)]) + rng.randrange(-70, 70)]))
		elif m == 6:
			for _ in range(rng.randrange(1, 4)):
				if len(d):
					d[rng.randrange(len(d))] ^= 1 << rng.randrange(8)
		elif m == 7 and cs:  # junk, sometimes with a false or a copied chunk header, before a chunk
			j = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))
			if rng.random() < 0.5:
				j += b"PTZC" + bytes(rng.randrange(256) for _ in range(60))
			if rng.random() < 0.3:
				c = rng.choice(cs)
				j += bytes(d[c:c + 64 + le(d, c + 44, 4)])
			d[off:off] = j
			put(d, 4032, 8, le(d, 4032, 8) + len(j))
		elif m == 8 and len(cs) > 1:  # chunks swapped or dropped: sequence gaps
			i = rng.randrange(len(cs) - 1)
			a, b = cs[i], cs[i + 1]
			ea = b
			eb = b + 64 + le(d, b + 44, 4)
			if rng.random() < 0.5:
				d[a:eb] = d[b:eb] + d[a:ea]
			else:
				del d[a:ea]
				put(d, 4032, 8, le(d, 4032, 8) - (ea - a))
	return bytes(d)


def main():
	src, outdir, count, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
	data = open(src, "rb").read()
	rng = random.Random(seed)
	base = os.path.splitext(os.path.basename(src))[0]
	for i in range(count):
		with open(os.path.join(outdir, "%s-mut%03d.ptz" % (base, i)), "wb") as f:
			f.write(mutate(data, rng))


if __name__ == "__main__":
	main()
