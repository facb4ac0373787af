#!/usr/bin/python3
"""tests/export/perfetto/make_fixtures.py - (re)write fixtures/*.textproto and
fixtures/cases.tsv: the crafted traces of reference perfetto-validation.md
(section 2), whose verdicts the real trace processor v58.2 gave, plus three
the issue adds (END with nothing open, counter on a slice track, a flow with
one end). The outputs are checked in; run this only to change them:

    /usr/bin/python3 tests/export/perfetto/make_fixtures.py tests/export/perfetto/fixtures

cases.tsv: name, verdict (ok | warning | error | fatal), the rule the
checker must name (- for ok), and what TP did.
"""
import copy
import os
import sys


class E(str):
    """An enum value (printed bare in textproto)."""


def render(msg, ind=0):
    pad = "  " * ind
    lines = []
    for k, v in msg.items():
        vals = v if isinstance(v, list) else [v]
        for x in vals:
            if isinstance(x, dict):
                lines.append(f"{pad}{k} {{")
                lines.append(render(x, ind + 1))
                lines.append(f"{pad}}}")
            elif isinstance(x, E):
                lines.append(f"{pad}{k}: {x}")
            elif isinstance(x, bool):
                lines.append(f"{pad}{k}: {'true' if x else 'false'}")
            elif isinstance(x, str):
                lines.append(f'{pad}{k}: "{x}"')
            else:
                lines.append(f"{pad}{k}: {x}")
    return "\n".join(l for l in lines if l)


def ev(ts, seq, typ, flags=2, **te):
    p = {"timestamp": ts, "trusted_packet_sequence_id": seq}
    t = {"type": E(typ)}
    t.update(te)
    p["track_event"] = t
    if flags is not None:
        p["sequence_flags"] = flags
    return p


def B(ts, seq, iid, **kw):
    return ev(ts, seq, "TYPE_SLICE_BEGIN", name_iid=iid, **kw)


def End(ts, seq, **kw):
    return ev(ts, seq, "TYPE_SLICE_END", **kw)


def clean():
    """Process, 2 threads, a GPU group with a stream, RSS and bandwidth
    counters, 3 flows (launch -> kernel): 15 slices, 3 flows, 6 counter values."""
    P = []
    P.append({"timestamp": 1, "trusted_packet_sequence_id": 1, "sequence_flags": 1,
              "track_descriptor": {"uuid": 1, "process": {"pid": 4242, "process_name": "fixture"}}})
    P.append({"trusted_packet_sequence_id": 1,
              "track_descriptor": {"uuid": 10, "parent_uuid": 1, "name": "GPU 0"}})
    P.append({"trusted_packet_sequence_id": 1,
              "track_descriptor": {"uuid": 11, "parent_uuid": 10, "name": "stream 7"}})
    P.append({"trusted_packet_sequence_id": 1,
              "track_descriptor": {"uuid": 20, "parent_uuid": 1, "name": "rss",
                                   "counter": {"unit": E("UNIT_SIZE_BYTES")}}})
    P.append({"trusted_packet_sequence_id": 1,
              "track_descriptor": {"uuid": 21, "parent_uuid": 1, "name": "bandwidth",
                                   "counter": {"unit_name": "GB/s"}}})
    for seq, uuid, tid, tname, names in ((2, 2, 4242, "main", ["main_loop", "launch"]),
                                         (3, 3, 4243, "worker", ["step"]),
                                         (4, 11, None, None, ["kernel"])):
        first = {"timestamp": 1, "trusted_packet_sequence_id": seq, "sequence_flags": 3,
                 "interned_data": {"event_names": [{"iid": i + 1, "name": n} for i, n in enumerate(names)]},
                 "trace_packet_defaults": {"track_event_defaults": {"track_uuid": uuid}}}
        if tid:
            first["track_descriptor"] = {"uuid": uuid, "thread": {"pid": 4242, "tid": tid, "thread_name": tname}}
        P.append(first)
    # main: main_loop [100, 1000] { launch x3 }, each launch starts a flow
    P.append(B(100, 2, 1))
    for k, t in enumerate((200, 400, 600)):
        P.append(B(t, 2, 2, flow_ids=k + 1))
        P.append(End(t + 100, 2))
    P.append(End(1000, 2))
    # worker: 8 steps
    for k in range(8):
        P.append(B(110 + 100 * k, 3, 1))
        P.append(End(150 + 100 * k, 3))
    # GPU stream: kernels terminate the flows
    for k, t in enumerate((350, 550, 750)):
        P.append(B(t, 4, 1, terminating_flow_ids=k + 1))
        P.append(End(t + 30, 4))
    # counters (process sequence, explicit tracks)
    for t, rss, bw in ((100, 1000, 1.5), (500, 2000, 2.5), (900, 1500, 0.0)):
        P.append(ev(t, 1, "TYPE_COUNTER", flags=None, track_uuid=20, counter_value=rss))
        P.append(ev(t, 1, "TYPE_COUNTER", flags=None, track_uuid=21, double_counter_value=bw))
    return P


def first_of(P, seq):
    return next(p for p in P if p.get("trusted_packet_sequence_id") == seq and p.get("sequence_flags") == 3)


def events_of(P, seq):
    return [p for p in P if p.get("trusted_packet_sequence_id") == seq and "track_event" in p]


def v_no_cleared():
    P = clean()
    first_of(P, 3)["sequence_flags"] = 2
    return P


def v_prev_dropped():
    P = clean()
    events_of(P, 3)[4]["previous_packet_dropped"] = 1
    return P


def v_needs_no_seq():
    P = clean()
    del events_of(P, 3)[2]["trusted_packet_sequence_id"]
    return P


def v_no_seq_no_flags():
    P = clean()
    for p in events_of(P, 3):
        del p["trusted_packet_sequence_id"]
        del p["sequence_flags"]
        p["track_event"]["track_uuid"] = 3
        if p["track_event"].pop("name_iid", None):
            p["track_event"]["name"] = "step"
    return P


def v_clock(cid, snapshot=False, only_seq=None, via_defaults=False, primary=False):
    P = clean()
    for p in P:
        if only_seq is not None and p.get("trusted_packet_sequence_id") != only_seq:
            continue
        if via_defaults:
            if p.get("sequence_flags") == 3:
                p["trace_packet_defaults"]["timestamp_clock_id"] = cid
            elif p.get("trusted_packet_sequence_id") == 1 and p.get("sequence_flags") == 1:
                p["sequence_flags"] = 3
                p["trace_packet_defaults"] = {"timestamp_clock_id": cid}
            elif p.get("trusted_packet_sequence_id") == 1 and "track_event" in p:
                p["sequence_flags"] = 2
        else:
            p["timestamp_clock_id"] = cid
    if snapshot:
        snap = {"clocks": [{"clock_id": 6, "timestamp": 5000000}, {"clock_id": 3, "timestamp": 4000000}]}
        if primary:
            snap["primary_trace_clock"] = E("BUILTIN_CLOCK_MONOTONIC")
        P.insert(0, {"timestamp": 5000000, "trusted_packet_sequence_id": 99, "clock_snapshot": snap})
    return P


def v_counter_desc_after():
    P = clean()
    descs = [p for p in P if "counter" in p.get("track_descriptor", {})]
    P = [p for p in P if p not in descs] + descs
    return P


def v_slice_desc_at_end():
    P = clean()
    descs = [p for p in P if "track_descriptor" in p and "counter" not in p["track_descriptor"]
             and "process" not in p["track_descriptor"]]
    for p in descs:
        if p.get("sequence_flags") == 3:  # keep the sequence's first packet, move only the descriptor
            d = p.pop("track_descriptor")
            P.append({"trusted_packet_sequence_id": p["trusted_packet_sequence_id"], "track_descriptor": d})
        else:
            P.remove(p)
            P.append(p)
    return P


def v_end_category():
    P = clean()
    for p in events_of(P, 2) + events_of(P, 3):
        if p["track_event"]["type"] == "TYPE_SLICE_END":
            p["track_event"]["categories"] = "cpu"
    return P


def v_gpu_before_launch():
    P = clean()
    for p in events_of(P, 4):
        p["timestamp"] -= 200
    return P


def v_uuid_redeclared():
    P = clean()
    P.append({"trusted_packet_sequence_id": 1,
              "track_descriptor": {"uuid": 3, "name": "oops", "counter": {}}})
    return P


def v_tie(begin_first):
    P = clean()
    # worker: A [2000, 2200], B [2200, 2300] with the tie at 2200
    P.append({"trusted_packet_sequence_id": 3, "sequence_flags": 2, "timestamp": 2000,
              "interned_data": {"event_names": [{"iid": 7, "name": "A"}, {"iid": 8, "name": "B"}]},
              "track_event": {"type": E("TYPE_SLICE_BEGIN"), "name_iid": 7}})
    if begin_first:
        P += [B(2200, 3, 8), End(2200, 3), End(2300, 3)]
    else:
        P += [End(2200, 3), B(2200, 3, 8), End(2300, 3)]
    return P


def v_reversed():
    P = clean()
    head = [p for p in P if "track_event" not in p]
    evs = [p for p in P if "track_event" in p]
    return head + evs[::-1]


def v_end_empty():
    P = clean()
    P.append(End(5000, 3))
    return P


def v_counter_on_slice_track():
    P = clean()
    P.append(ev(950, 1, "TYPE_COUNTER", flags=None, track_uuid=2, counter_value=5))
    return P


def v_flow_one_end():
    P = clean()
    P.append(B(3000, 2, 2, flow_ids=77))
    P.append(End(3100, 2))
    return P


CASES = [
    ("clean", clean, "ok", "-", "15 slices, 3 flows, 6 counter values, no error stats"),
    ("first-packet-not-cleared", v_no_cleared, "error", "packet_skipped_seq_needs_incremental_state_invalid",
     "packets dropped, interned data skipped"),
    ("previous-packet-dropped", v_prev_dropped, "error", "packet_skipped_seq_needs_incremental_state_invalid",
     "the rest of the sequence dropped"),
    ("needs-without-sequence-id", v_needs_no_seq, "fatal", "seq_needs_incremental_state_without_sequence_id",
     "whole import fails"),
    ("events-without-sequence-id", v_no_seq_no_flags, "error", "track_event_missing_sequence_id", "dropped"),
    ("clock3-no-snapshot", lambda: v_clock(3), "error", "clock_sync_failure_unknown_source_clock",
     "all packets dropped"),
    ("clock6-no-snapshot", lambda: v_clock(6), "ok", "-", "fine"),
    ("snapshot-then-clock3", lambda: v_clock(3, snapshot=True), "ok", "-", "fine, converted to BOOTTIME"),
    ("one-sequence-clock3", lambda: v_clock(3, only_seq=4), "error", "clock_sync_failure_unknown_source_clock",
     "that sequence dropped, flows lost"),
    ("counter-descriptors-after-values", v_counter_desc_after, "error", "track_event_counter_invalid_track_uuid",
     "all 6 counter values dropped"),
    ("slice-descriptors-at-end", v_slice_desc_at_end, "ok", "-", "fine"),
    ("end-with-category", v_end_category, "error", "slice_never_ended", "9 slices never end (dur -1), no stat"),
    ("gpu-before-launch", v_gpu_before_launch, "error", "flow_terminating_before_start", "flows = 0, no stat"),
    ("uuid-redeclared-as-counter", v_uuid_redeclared, "error", "track_descriptor_conflicting_reservation",
     "track_descriptor_conflicting_reservation"),
    ("begin-before-end-same-ts", lambda: v_tie(True), "warning", "end_after_begin_at_same_ts",
     "B nested in A with dur 0, A stretched"),
    ("end-before-begin-same-ts", lambda: v_tie(False), "ok", "-", "correct siblings"),
    ("snapshot-defaults-clock3", lambda: v_clock(3, snapshot=True, via_defaults=True), "ok", "-",
     "fine, shifted into BOOTTIME"),
    ("snapshot-defaults-clock3-primary", lambda: v_clock(3, snapshot=True, via_defaults=True, primary=True),
     "ok", "-", "fine, raw MONOTONIC kept"),
    ("events-reversed", v_reversed, "ok", "-", "identical import (full sort)"),
    ("end-without-open-slice", v_end_empty, "error", "end_without_open_slice", "END ignored (issue 4)"),
    ("counter-on-slice-track", v_counter_on_slice_track, "error", "track_event_counter_invalid_track_uuid",
     "counter event dropped (issue 4)"),
    ("flow-one-end", v_flow_one_end, "error", "flow_single_endpoint", "no arrow (issue 4)"),
]


def main(outdir):
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "cases.tsv"), "w") as tsv:
        tsv.write("# name\tverdict\trule\twhat the trace processor did (reference perfetto-validation.md)\n")
        for name, fn, verdict, rule, tp in CASES:
            P = copy.deepcopy(fn())
            with open(os.path.join(outdir, name + ".textproto"), "w") as fh:
                fh.write(f"# {name}: {tp}\n# generated by make_fixtures.py; "
                         f"encode: protoc --encode=perfetto.protos.Trace perfetto_trace_subset.proto\n")
                fh.write(render({"packet": P}) + "\n")
            tsv.write(f"{name}\t{verdict}\t{rule}\t{tp}\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "fixtures"))
