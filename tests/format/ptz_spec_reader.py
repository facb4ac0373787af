#!/usr/bin/python3
"""ptz_spec_reader.py - an independent .ptz reader written from doc/trace-format.md alone.

Usage: ptz_spec_reader.py FILE.ptz

Prints the canonical dump that tests/format/ptz_dump.c prints through the C
reader (include/ptz/format.h), so the two can be diffed
(tests/format/check_spec_reader.sh). Section numbers (§) refer to
doc/trace-format.md. Standard library plus Debian's python3-zstandard and
python3-xxhash; run it with /usr/bin/python3.
"""
import math
import sys

import xxhash
import zstandard

HEADER_BYTES = 4096
CHUNK_HEADER_BYTES = 64
MAX_RAW = 16 << 20                        # §3.2 check 6
MAX_STORED = MAX_RAW + MAX_RAW // 256     # ZSTD_compressBound(16 MiB) = 16 842 752
META_THREAD = 0xFFFFFFFF
MAX_ID = 1 << 24                          # §4.4 tables, §8 limits
STACK = 256                               # §4.3 FMT_CHUNK_STACK
U32 = 0xFFFFFFFF
U64 = (1 << 64) - 1
NONE = U64                                # torn_tail_offset when there is none

# Problem phrases named by the document, in the order a dump lists them when
# one message carries several (the C dump matches the same list).
P_HDR = "process metadata ignored"
P_TRUNC = "file truncated"
P_COMMITTED = "committed length"
P_MAGIC = "bad chunk magic"
P_HXX = "chunk header checksum mismatch"
P_HLEN = "unsupported chunk header length"
P_KIND = "unknown chunk kind"
P_COMP = "unknown compression"
P_SIZE = "chunk size out of bounds"
P_RECS = "record count exceeds payload size"
P_TICKS = "chunk tick range reversed"
P_RUNS = "chunk length runs into the next chunk"
P_END = "to the end"
P_TORN = "torn tail"
P_THREAD = "event chunk with thread index"
P_UNREAD = "payload unreadable"
P_PXX = "payload checksum mismatch"
P_ZSIZE = "zstd frame size disagrees with header"
P_ZFAIL = "decompression failed"
P_DECODE = "payload does not decode at byte"
P_CLOCK = "clock: fewer than two calibration points"
P_EARLIER = "earlier chunks missing"
P_MISSING = "chunks missing"
P_BACK = "out of order or repeated"
P_REPEAT = "exactly (skipped)"


def xxh3(b):
	"""XXH3-64, seed 0, default secret (§1)."""
	return xxhash.xxh3_64_intdigest(bytes(b))


def u16(b, o):
	return int.from_bytes(b[o:o + 2], "little")


def u32(b, o):
	return int.from_bytes(b[o:o + 4], "little")


def u64(b, o):
	return int.from_bytes(b[o:o + 8], "little")


def esc(b):
	"""Bytes as the dump prints them: printable ASCII as is, the rest as \\xNN."""
	out = []
	for c in b:
		if c == 0x5C:
			out.append("\\\\")
		elif 0x20 <= c < 0x7F:
			out.append(chr(c))
		else:
			out.append("\\x%02x" % c)
	return "".join(out)


def header_string(h, off, size):
	"""§2 string field: u16 n clamped to F-2, text ends at its first NUL, bytes < 0x20 shown as '?'."""
	n = min(u16(h, off), size - 2)
	t = h[off + 2:off + 2 + n]
	z = t.find(b"\0")
	if z >= 0:
		t = t[:z]
	return bytes(c if c >= 0x20 else 0x3F for c in t)


class Corrupt(Exception):
	pass


class Payload:
	"""A raw payload with a cursor (§4)."""

	def __init__(self, data):
		self.d = data
		self.p = 0

	def varint(self, end):
		"""§4.1: unsigned LEB128, at most 10 bytes, 10th byte 0x00 or 0x01, not past end."""
		v = 0
		for i in range(10):
			if self.p >= end:
				raise Corrupt("varint cut off")
			c = self.d[self.p]
			self.p += 1
			if i == 9:
				if c > 1:
					raise Corrupt("varint too long")
				return v | (c << 63)
			v |= (c & 0x7F) << (7 * i)
			if not c & 0x80:
				return v
		raise Corrupt("unreachable")

	def u32(self, end):
		v = self.varint(end)
		if v > U32:
			raise Corrupt("u32 field too large")
		return v


def rec(kind, ticks, id_=0, aux=0, value=0, value2=0, value3=0, value4=0, s=None):
	return {"kind": kind, "ticks": ticks, "id": id_, "aux": aux, "value": value, "value2": value2,
		"value3": value3, "value4": value4, "str": s}


def decode(raw, first_ticks):
	"""Decode a raw payload (§4). Returns (records, None) or (records so far, byte offset of the bad record)."""
	out = []
	pl = Payload(raw)
	n = len(raw)
	T = first_ticks
	D = 0
	S = [0] * STACK
	while pl.p < n:
		start = pl.p
		try:
			tag = raw[pl.p]
			pl.p += 1
			if tag == 0x00 or 0x09 <= tag <= 0x3F:
				raise Corrupt("invalid tag")
			if tag <= 0x08:
				timed = tag in (0x01, 0x02, 0x05, 0x06, 0x07, 0x08)
				if timed:
					dt = pl.varint(n)
					if T + dt > U64:
						raise Corrupt("tick overflow")
					nt = T + dt
				if tag == 0x01:
					i = pl.u32(n)
					if D < STACK:
						S[D] = i
					D += 1
					r = rec(0x01, nt, i)
				elif tag == 0x02:
					i = pl.u32(n)
					if D > 0:
						D -= 1
					r = rec(0x02, nt, i)
				elif tag == 0x03:
					k = pl.u32(n)
					v = pl.varint(n)
					r = rec(0x03, T, aux=k, value=v)
				elif tag == 0x04:
					k = pl.u32(n)
					v = pl.varint(n)
					r = rec(0x04, T, aux=k, value=v)
				elif tag == 0x05:
					i = pl.u32(n)
					zz = pl.varint(n)
					v = (zz >> 1) ^ (-(zz & 1) & U64)
					r = rec(0x05, nt, i, value=v & U64)
				elif tag == 0x06:
					a = pl.varint(n)
					b = pl.varint(n)
					r = rec(0x06, nt, value=a, value2=b)
				elif tag == 0x07:
					c = pl.u32(n)
					v = pl.varint(n)
					r = rec(0x07, nt, aux=c, value=v)
				else:  # 0x08 END_TOP
					if D == 0 or D > STACK:
						raise Corrupt("END_TOP without an in-chunk BEGIN")
					r = rec(0x02, nt, S[D - 1])
					D -= 1
				if timed:
					T = nt
				out.append(r)
				continue
			# §4.4 length-prefixed
			L = pl.varint(n)
			if L > n - pl.p:
				raise Corrupt("length past the payload")
			end = pl.p + L
			body_end = end
			if tag == 0x80:
				i = pl.u32(end)
				dom = pl.u32(end)
				r = rec(0x80, T, i, aux=dom, s=raw[pl.p:end])
			elif tag == 0x81:
				i = pl.u32(end)
				r = rec(0x81, T, i, s=raw[pl.p:end])
			elif tag == 0x82:
				i = pl.u32(end)
				tid = pl.u32(end)
				st = pl.varint(end)
				en = pl.varint(end)
				r = rec(0x82, st, i, value=tid, value2=en, s=raw[pl.p:end])
			elif tag == 0x83:
				t = pl.varint(end)
				mono = pl.varint(end)
				real = pl.varint(end)
				br = pl.varint(end)
				r = rec(0x83, t, aux=min(br, U32), value=mono, value2=real)
			elif 0x40 <= tag <= 0x44:
				i = pl.u32(end)
				aux = pl.u32(end)
				v = pl.varint(end)
				v2 = pl.varint(end)
				t = pl.varint(end)
				v3 = v4 = 0
				if tag == 0x43 and pl.p < end:
					v3 = pl.varint(end)
				if tag == 0x43 and pl.p < end:
					v4 = pl.varint(end)
				r = rec(tag, t, i, aux, v, v2, v3, v4)
			else:
				r = None  # unknown kind: skipped whole, not an error
			pl.p = body_end
			if r is not None:
				out.append(r)
		except Corrupt:
			return out, start
	return out, None


class Reader:
	def __init__(self, path):
		self.problems = []  # (offset, phrase list)
		self.rc = 0
		with open(path, "rb") as f:
			self.data = f.read()
		d = self.data
		S = len(d)
		self.file_bytes = S
		# §6.1
		if S < HEADER_BYTES:
			self.rc = "-PT_ETRUNCATED"
			return
		if d[0:8] != b"PTZTRACE":
			self.rc = "-PT_ECORRUPT"
			return
		self.header_ok = u64(d, 4000) == xxh3(d[0:4000])
		self.version_major = u16(d, 8)
		self.version_minor = u16(d, 10)
		if self.header_ok and self.version_major != 1:
			self.rc = "-PT_EVERSION"
			return
		if self.header_ok:
			self.clock_source = u32(d, 16)
			self.pid = u32(d, 20)
			self.start_ticks = u64(d, 24)
			self.start_mono_ns = u64(d, 32)
			self.start_real_ns = u64(d, 40)
			self.process_name = header_string(d, 64, 256)
			self.host = header_string(d, 320, 256)
			self.recorder_version = header_string(d, 576, 64)
			self.cmdline = header_string(d, 640, 3072)
			self.job = header_string(d, 3712, 128)  # 1.2
			rk = u32(d, 3840)
			self.has_rank, self.rank = rk != 0, (rk - 1 if rk else 0)
			# §11 (1.3): a part of a rotated run: the run id, and the part's number when there is one
			self.run_id = u64(d, 56)
			self.part = u32(d, 3844) if self.run_id else 0
		else:
			self.problems.append((0, [P_HDR]))
			self.clock_source = self.pid = self.start_ticks = self.start_mono_ns = self.start_real_ns = 0
			self.process_name = self.host = self.recorder_version = self.cmdline = self.job = b""
			self.has_rank, self.rank = False, 0
			self.run_id = self.part = 0
		C = u64(d, 4032)
		self.committed_bytes = C
		flags = u64(d, 4040)
		self.closed = flags & 1
		# §10: flight (bit 1) and window (bit 2) files
		self.flight = bool(flags & 2)
		self.window = bool(flags & 6)
		self.laps = u64(d, 4048) if self.flight else 0
		self.flight_bytes = u64(d, 48) if self.flight and self.header_ok else 0
		self.overwritten = 0
		# §6.2
		if 4096 <= C <= S:
			self.limit = C
		elif C > S:
			self.limit = S
			self.problems.append((S, [P_TRUNC]))
		else:
			self.limit = S
			self.problems.append((4032, [P_COMMITTED]))
		self.chunks = []  # indexed chunk headers (dicts), file order
		self.strings = {}
		self.domains = {0: b""}
		self.threads = {}  # index -> dict
		self.clock_points = []
		self.torn_tail_offset = NONE
		self.corrupt_regions = 0
		self.walk()
		self.build_clock()
		self.sequence_gaps()

	# §3.2
	def check_header(self, off):
		h = self.data[off:off + 64]
		if h[0:4] != b"PTZC":
			return P_MAGIC, None
		if u64(h, 56) != xxh3(h[0:56]):
			return P_HXX, None
		if u16(h, 6) != 64:
			return P_HLEN, None
		kind, comp = h[4], h[5]
		if kind not in (1, 2):
			return P_KIND, None
		if comp not in (0, 1):
			return P_COMP, None
		raw, stored = u32(h, 40), u32(h, 44)
		if raw > MAX_RAW or stored > MAX_STORED or (comp == 0 and stored != raw):
			return P_SIZE, None
		records = u32(h, 12)
		if records > raw:
			return P_RECS, None
		first, last = u64(h, 24), u64(h, 32)
		if last < first:
			return P_TICKS, None
		return None, {"offset": off, "kind": kind, "comp": comp, "thread": u32(h, 8), "records": records,
			      "sequence": u64(h, 16), "first_ticks": first, "last_ticks": last, "raw_bytes": raw,
			      "stored_bytes": stored, "payload_xxh": u64(h, 48)}

	def resync(self, off):
		p = off
		while True:
			p = self.data.find(b"PTZC", p + 1, self.limit)
			if p < 0 or p + 64 > self.limit:
				return None
			if self.check_header(p)[0] is None:
				return p

	# §3.3: (raw bytes, None) or (None, phrase)
	def load(self, c):
		o = c["offset"] + 64
		stored = self.data[o:o + c["stored_bytes"]]
		if len(stored) != c["stored_bytes"]:
			return None, P_UNREAD
		if xxh3(stored) != c["payload_xxh"]:
			return None, P_PXX
		if c["comp"] == 0:
			return stored, None
		try:  # §3.3: a frame header that does not parse carries no matching size
			fcs = zstandard.frame_content_size(stored)
		except zstandard.ZstdError:
			return None, P_ZSIZE
		if fcs != c["raw_bytes"]:
			return None, P_ZSIZE
		try:
			raw = zstandard.ZstdDecompressor().decompress(stored, max_output_size=c["raw_bytes"])
		except zstandard.ZstdError:
			return None, P_ZFAIL
		if len(raw) != c["raw_bytes"]:
			return None, P_ZFAIL
		return raw, None

	def thread_entry(self, index):
		if index not in self.threads:
			self.threads[index] = {"tid": 0, "start": 0, "end": 0, "name": b""}
		return self.threads[index]

	def table_records(self, recs):
		"""§4.4 Tables, from the records of a meta chunk."""
		for r in recs:
			k = r["kind"]
			if k == 0x80 and 1 <= r["id"] < MAX_ID and r["id"] not in self.strings:
				self.strings[r["id"]] = (r["str"], r["aux"])
			elif k == 0x81 and 1 <= r["id"] < MAX_ID and r["id"] not in self.domains:
				self.domains[r["id"]] = r["str"]
			elif k == 0x82 and r["id"] < MAX_ID:  # thread indexes are < 2^24 (§3.1)
				t = self.thread_entry(r["id"])
				t["tid"] = r["value"]
				if r["ticks"] and (not t["start"] or r["ticks"] < t["start"]):
					t["start"] = r["ticks"]
				if r["value2"]:
					t["end"] = r["value2"]
				if r["str"]:
					t["name"] = r["str"]
			elif k == 0x83:
				self.clock_points.append((r["ticks"], r["value"]))

	# §6.3
	def index(self, c):
		off = c["offset"]
		self.chunks.append(c)
		if c["kind"] == 2:
			raw, perr = self.load(c)
			if raw is None:
				c["bad"] = True  # §6.4: reported once
				self.problems.append((off, [perr]))
			else:
				recs, bad = decode(raw, c["first_ticks"])
				self.table_records(recs)
				if bad is not None:
					self.problems.append((off, [P_DECODE]))
		elif c["thread"] == META_THREAD or c["thread"] >= MAX_ID:
			self.problems.append((off, [P_THREAD]))
		else:
			self.thread_entry(c["thread"])

	# §10: a flight file's older part [C, E), junk skipped without a problem
	def walk_older(self):
		E = HEADER_BYTES + self.flight_bytes if self.flight_bytes else self.file_bytes
		E = min(E, self.file_bytes)
		C = self.limit
		if C >= E:
			return
		keep, self.limit = self.limit, E
		off = self.resync(C) if C + 64 <= E else None  # never the chunk at C itself
		off = E if off is None else off
		self.overwritten += off - C
		while off + 64 <= E:
			why, c = self.check_header(off)
			if why is None and off + 64 + c["stored_bytes"] <= E:
				self.index(c)
				off += 64 + c["stored_bytes"]
				continue
			nxt = self.resync(off)
			nxt = E if nxt is None else nxt
			self.overwritten += nxt - off
			off = nxt
		if off < E:
			self.overwritten += E - off
		self.limit = keep

	def walk(self):
		if self.flight and self.laps:
			self.walk_older()
		off = HEADER_BYTES
		lim = self.limit
		while off < lim:
			if off + 64 > lim:
				self.torn_tail_offset = off
				self.problems.append((off, [P_TORN]))
				return
			why, c = self.check_header(off)
			if why is None and off + 64 + c["stored_bytes"] <= lim:
				self.index(c)
				off += 64 + c["stored_bytes"]
				continue
			nxt = self.resync(off)
			if why is None:
				if nxt is None:
					self.torn_tail_offset = off
					self.problems.append((off, [P_TORN]))
					return
				why = P_RUNS
			self.corrupt_regions += 1
			self.problems.append((off, [why] + ([P_END] if nxt is None else [])))
			off = lim if nxt is None else nxt

	# §7
	def build_clock(self):
		self.kept = []
		if self.clock_source == 3:
			return
		pts = list(self.clock_points)
		if self.header_ok and self.start_mono_ns != 0:
			pts.append((self.start_ticks, self.start_mono_ns))
		pts.sort(key=lambda p: p[0])
		for t, ns in pts:
			if not self.kept or (t > self.kept[-1][0] and ns >= self.kept[-1][1]):
				self.kept.append((t, ns))
		if len(self.kept) < 2:
			self.problems.append((0, [P_CLOCK]))

	def ticks_to_ns(self, t):
		if self.clock_source == 3:
			return t
		k = self.kept
		n = len(k)
		if n == 0:
			return t
		if n == 1:
			v = k[0][1] + (t - k[0][0])
		else:
			i = 0
			if t <= k[0][0]:
				i = 0
			elif t >= k[-1][0]:
				i = n - 2
			else:
				while not (k[i][0] <= t < k[i + 1][0]):
					i += 1
			Ti, Ni = k[i]
			Tj, Nj = k[i + 1]
			dt = t - Ti  # the exact difference, negative before Ti
			x = float(dt) * float(Nj - Ni) / float(Tj - Ti)
			a = math.floor(abs(x))  # round() halves away from zero, exactly
			if abs(x) - a >= 0.5:
				a += 1
			v = Ni + int(a if x >= 0 else -a)
		return max(0, min(v, U64))

	def ns_per_tick(self):
		if self.clock_source == 3 or len(self.kept) < 2:
			return 1.0
		# §7: to the first kept point at least 1 s (10^9 ns) after the first, else the last
		e = next((i for i in range(1, len(self.kept)) if self.kept[i][1] - self.kept[0][1] >= 10**9),
			 len(self.kept) - 1)
		return float(self.kept[e][1] - self.kept[0][1]) / float(self.kept[e][0] - self.kept[0][0])

	# §6.3 sequence gaps
	def sequence_gaps(self):
		gaps = []
		for index in sorted(self.threads):  # ascending thread index
			exp = 0
			prev = None
			for c in self.chunks:
				if c["kind"] != 1 or c["thread"] != index:
					continue
				if prev is None and self.window:  # §10: a window starts anywhere
					exp = c["sequence"]
				if prev is not None and all(c[k] == prev[k] for k in ("sequence", "records", "payload_xxh")):
					c["bad"] = True  # an exact repeat: skipped by iteration, reported here
					gaps.append((c["offset"], [P_REPEAT]))
					continue
				if c["sequence"] != exp:
					gaps.append((c["offset"], [P_EARLIER if prev is None else P_BACK if c["sequence"] < exp
								   else P_MISSING]))
				exp = c["sequence"] + 1
				prev = c
		self.problems.extend(gaps)


def chunk_line(c, r):
	# pt_chunk_info has no kind: a meta chunk reads as thread PT_FMT_META_THREAD
	thread = c["thread"] if c["kind"] == 1 else META_THREAD
	return "chunk @%d thread=%d seq=%d records=%d first=%d (%d ns) last=%d (%d ns)" % (
		c["offset"], thread, c["sequence"], c["records"],
		c["first_ticks"], r.ticks_to_ns(c["first_ticks"]), c["last_ticks"], r.ticks_to_ns(c["last_ticks"]))


def record_line(r, x):
	s = "-" if x["str"] is None else '"%s"' % esc(x["str"])
	return "  rec 0x%02x t=%d ns=%d id=%d aux=%d v=%d v2=%d v3=%d v4=%d str=%s" % (
		x["kind"], x["ticks"], r.ticks_to_ns(x["ticks"]), x["id"], x["aux"], x["value"], x["value2"],
		x["value3"], x["value4"], s)


def dump(path):
	r = Reader(path)
	o = []
	o.append("open %s" % (r.rc if r.rc else "0"))
	if r.rc:
		return "\n".join(o) + "\n"
	o.append("version %d.%d" % (r.version_major, r.version_minor))
	o.append("clock_source %d pid %d" % (r.clock_source, r.pid))
	o.append("start ticks=%d mono_ns=%d real_ns=%d" % (r.start_ticks, r.start_mono_ns, r.start_real_ns))
	o.append('process_name "%s"' % esc(r.process_name))
	o.append('host "%s"' % esc(r.host))
	o.append('recorder_version "%s"' % esc(r.recorder_version))
	o.append('cmdline "%s"' % esc(r.cmdline))
	o.append("committed_bytes %d file_bytes %d closed %d header_damaged %d" % (
		r.committed_bytes, r.file_bytes, r.closed, 0 if r.header_ok else 1))
	if r.job or r.has_rank:  # §2, 1.2
		o.append('job "%s" rank %s%d' % (esc(r.job), "" if r.has_rank else "none ", r.rank))
	if r.run_id:  # §2, §11 (1.3)
		o.append("run_id %016x part %d" % (r.run_id, r.part))
	if r.window:  # §10
		o.append("window flight %d flight_bytes %d laps %d overwritten_bytes %d" % (
			1 if r.flight else 0, r.flight_bytes, r.laps, r.overwritten))
	ev = [c for c in r.chunks if c["kind"] == 1]
	o.append("chunks %d event_chunks %d raw_bytes %d stored_bytes %d" % (
		len(r.chunks), len(ev), sum(c["raw_bytes"] for c in r.chunks), sum(c["stored_bytes"] for c in r.chunks)))
	z = [c for c in r.chunks if c["comp"] == 1]
	o.append("compressed_chunks %d raw_bytes %d stored_bytes %d" % (
		len(z), sum(c["raw_bytes"] for c in z), sum(c["stored_bytes"] for c in z)))
	tt = "none" if r.torn_tail_offset == NONE else str(r.torn_tail_offset)
	o.append("torn_tail %s corrupt_regions %d" % (tt, r.corrupt_regions))
	o.append("ns_per_tick %s" % format(r.ns_per_tick(), ".17g"))
	o.append("problems_at_open %d" % len(r.problems))
	o.append("index")
	for c in r.chunks:
		o.append("  " + chunk_line(c, r))
	o.append("threads %d" % len(r.threads))
	for i in sorted(r.threads):  # pt_reader_thread() lists them by index
		t = r.threads[i]
		o.append('  thread %d tid=%d start=%d end=%d name="%s"' % (
			i, t["tid"], t["start"], t["end"], esc(header_string_c(t["name"]))))
	# §6.4 iteration over every chunk
	dom_ids = {0}
	nrec = 0
	for c in r.chunks:
		if c.get("bad"):
			continue  # its payload failed before: skipped, not reported again
		raw, perr = r.load(c)
		if raw is None:
			c["bad"] = True
			r.problems.append((c["offset"], [perr]))
			continue
		o.append(chunk_line(c, r))
		recs, bad = decode(raw, c["first_ticks"])
		for x in recs:
			o.append(record_line(r, x))
			if x["kind"] == 0x81 and x["id"] < 65536:
				dom_ids.add(x["id"])
		nrec += len(recs)
		if bad is not None:
			r.problems.append((c["offset"], [P_DECODE]))
			o.append("  error -PT_ECORRUPT")
	o.append("records %d" % nrec)
	o.append("strings")
	for i in sorted(r.strings):
		s, dom = r.strings[i]
		dom_ids.add(dom)
		o.append('  string %d domain=%d "%s"' % (i, dom, esc(header_string_c(s))))
	o.append("domains")
	for i in sorted(d for d in dom_ids if d < 65536):
		v = r.domains.get(i)
		o.append("  domain %d %s" % (i, "(null)" if v is None else '"%s"' % esc(header_string_c(v))))
	o.append("problems %d" % len(r.problems))
	for off, why in r.problems:
		o.append("  @%d %s" % (off, " + ".join(why)))
	return "\n".join(o) + "\n"


def header_string_c(b):
	"""Table names exposed as C strings (format.h, §4.4): a NUL inside one is shown as '?'."""
	return b.replace(b"\0", b"?")


if __name__ == "__main__":
	if len(sys.argv) != 2:
		sys.stderr.write("usage: ptz_spec_reader.py FILE.ptz\n")
		sys.exit(2)
	sys.stdout.write(dump(sys.argv[1]))
