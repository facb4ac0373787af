#!/usr/bin/python3
"""tests/export/perfetto/pftrace_check.py - offline semantic checker for
Perfetto protobuf traces, emulating what Perfetto's trace processor (TP)
does on import (rules: tests/export/perfetto/README.md, which cites TP).

usage: pftrace_check.py [--ptz] PB2_DIR TRACE.pftrace   (prints findings; exit 0 ok/warning, 1 error, 2 fatal)
       or import it: check(trace_message, ptz=False) -> [Finding],
                     annotations(trace_message) -> [{name: value} or None per packet]

PB2_DIR holds perfetto_trace_subset_pb2.py, generated from our .proto with
`protoc --python_out`. Run with /usr/bin/python3 (Debian's python3-protobuf).

Passes, in TP's order:
  file order: per-sequence incremental state (invalid at sequence start,
    CLEARED makes it valid, previous_packet_dropped invalidates it, NEEDS on
    an invalid state drops the packet, NEEDS without a sequence id aborts the
    import), interning per (sequence, generation) of event names,
    categories and debug annotation names (a name_iid that resolves to
    nothing is TP's "Debug annotation with invalid name_iid": the arg is
    dropped), TrackEventDefaults, sequence id and timestamp present, descriptors complete, conflicting uuid
    re-declarations, counter descriptors before their values, a clock other
    than BOOTTIME without a ClockSnapshot that names it;
  sorted (timestamp, then file order): per-track BEGIN/END stacks with TP's
    END matching on name and category, END with nothing open, slices never
    ended, depth > 512, END at a BEGIN's timestamp written after it (warning),
    counters only on counter tracks and with a value, flows (single endpoint,
    terminating before the start).
Each finding names the rule (TP's stat name where TP has one).

ptz=True (--ptz) adds the exporter's own rule, which TP does not have:
  ptz_debug_annotation_name_not_interned - a debug annotation written with
    its name in full on a sequence whose incremental state is valid, where
    the exporter interns every name (InternedData.debug_annotation_names).
"""
import os
import subprocess
import sys
from collections import defaultdict, namedtuple

Finding = namedtuple("Finding", "severity rule packet msg")  # severity: fatal | error | warning

SEQ_CLEARED = 1
SEQ_NEEDS = 2
BOOTTIME = 6
T_BEGIN, T_END, T_INSTANT, T_COUNTER = 1, 2, 3, 4
MAX_DEPTH = 512


class _Seq:
    def __init__(self):
        self.valid = False
        self.names = {}
        self.cats = {}
        self.ann_names = {}
        self.default_track = None
        self.default_clock = None


def _annotation_findings(te, st, ptz, f, i, sid):
    """Resolves each debug annotation's name as TP does (top level and dict
    entries; array values have none)."""
    todo = [(a, True) for a in te.debug_annotations]
    while todo:
        a, named = todo.pop()
        if named:
            if a.HasField("name_iid"):
                if a.name_iid not in st.ann_names:
                    f("error", "debug_annotation_invalid_name_iid", i, f"iid {a.name_iid} on sequence {sid}")
            elif a.HasField("name"):
                if ptz:
                    f("error", "ptz_debug_annotation_name_not_interned", i, f"{a.name!r} on sequence {sid}")
            else:
                f("error", "debug_annotation_without_name", i)
        todo.extend((d, True) for d in a.dict_entries)
        todo.extend((v, False) for v in a.array_values)


def check(trace, ptz=False):
    out = []

    def f(sev, rule, i, msg=""):
        out.append(Finding(sev, rule, i, msg))

    packets = list(trace.packet)
    # clocks named by any ClockSnapshot (TP converts only through snapshots)
    snap_clocks = set()
    for p in packets:
        if p.HasField("clock_snapshot"):
            for c in p.clock_snapshot.clocks:
                snap_clocks.add(c.clock_id)

    seqs = defaultdict(_Seq)
    tracks = {}  # uuid -> (kind, parent)
    counter_tracks_seen = set()  # counter uuids declared so far (file order)
    events = []  # (ts, idx, track, type, name, cats, flows, term, te)
    for i, p in enumerate(packets):
        sid = p.trusted_packet_sequence_id if p.HasField("trusted_packet_sequence_id") else 0
        flags = p.sequence_flags
        if (flags & SEQ_NEEDS) and sid == 0:
            f("fatal", "seq_needs_incremental_state_without_sequence_id", i,
              "TracePacket specified SEQ_NEEDS_INCREMENTAL_STATE but the TraceWriter's sequence_id is zero")
            return out
        st = seqs[sid]
        if p.previous_packet_dropped:
            st.valid = False
        if (flags & SEQ_CLEARED) or p.incremental_state_cleared:
            if sid == 0:
                f("error", "incremental_state_cleared_missing_sequence_id", i)
            else:
                st.valid = True
                st.names, st.cats, st.ann_names = {}, {}, {}
                st.default_track = st.default_clock = None
        if (flags & SEQ_NEEDS) and not st.valid:
            f("error", "packet_skipped_seq_needs_incremental_state_invalid", i, f"sequence {sid}")
            continue
        if p.HasField("interned_data"):
            if sid == 0:
                f("error", "interned_data_missing_sequence_id", i)
            elif not st.valid:
                f("error", "interned_data_skipped_incremental_state_invalid", i, f"sequence {sid}")
            else:
                for n in p.interned_data.event_names:
                    st.names[n.iid] = n.name
                for n in p.interned_data.event_categories:
                    st.cats[n.iid] = n.name
                for n in p.interned_data.debug_annotation_names:
                    st.ann_names[n.iid] = n.name
        if p.HasField("trace_packet_defaults"):
            if sid == 0 or not st.valid:
                f("error", "trace_packet_defaults_without_valid_state", i)
            else:
                d = p.trace_packet_defaults
                if d.track_event_defaults.HasField("track_uuid"):
                    st.default_track = d.track_event_defaults.track_uuid
                if d.HasField("timestamp_clock_id"):
                    st.default_clock = d.timestamp_clock_id
        clock = p.timestamp_clock_id if p.HasField("timestamp_clock_id") else st.default_clock
        if clock is not None and clock != BOOTTIME and clock not in snap_clocks:
            f("error", "clock_sync_failure_unknown_source_clock", i, f"clock {clock}")
            continue
        if p.HasField("track_descriptor"):
            td = p.track_descriptor
            if not td.HasField("uuid"):
                f("error", "track_descriptor_missing_uuid", i)
                continue
            if td.HasField("process") and not td.process.HasField("pid"):
                f("error", "track_descriptor_process_missing_pid", i)
            if td.HasField("thread") and not (td.thread.HasField("pid") and td.thread.HasField("tid")):
                f("error", "track_descriptor_thread_missing_pid_tid", i)
            kind = ("process" if td.HasField("process") else "thread" if td.HasField("thread")
                    else "counter" if td.HasField("counter") else "plain")
            parent = td.parent_uuid if td.HasField("parent_uuid") and kind in ("counter", "plain") else None
            if td.uuid == 0 and parent:
                f("error", "track_descriptor_root_with_parent", i)
            prev = tracks.get(td.uuid)
            if prev is not None and prev != (kind, parent):
                f("error", "track_descriptor_conflicting_reservation", i, f"uuid {td.uuid}: {prev} then {(kind, parent)}")
            else:
                tracks[td.uuid] = (kind, parent)
                if kind == "counter":
                    counter_tracks_seen.add(td.uuid)
        if p.HasField("track_event"):
            te = p.track_event
            if sid == 0:
                f("error", "track_event_missing_sequence_id", i)
                continue
            if not p.HasField("timestamp"):
                f("error", "track_event_missing_timestamp", i)
                continue
            if te.type == 0:
                f("error", "track_event_unspecified_type", i)
                continue
            track = te.track_uuid if te.HasField("track_uuid") else (st.default_track or 0)
            name = None
            if te.HasField("name_iid"):
                name = st.names.get(te.name_iid)
                if name is None:
                    f("error", "track_event_unresolved_name_iid", i, f"iid {te.name_iid} on sequence {sid}")
            elif te.HasField("name"):
                name = te.name
            cats = tuple(te.categories) + tuple(st.cats.get(c, f"unknown({c})") for c in te.category_iids)
            _annotation_findings(te, st, ptz, f, i, sid)
            if len(te.extra_counter_values) > len(te.extra_counter_track_uuids):
                f("error", "track_event_extra_counter_track_uuid_mismatch", i)
                continue
            if te.type == T_COUNTER:
                if track not in counter_tracks_seen:
                    f("error", "track_event_counter_invalid_track_uuid", i, f"uuid {track}")
                    continue
                if not (te.HasField("counter_value") or te.HasField("double_counter_value")):
                    f("error", "track_event_counter_missing_value", i)
                    continue
            events.append((p.timestamp, i, track, te.type, name, cats, tuple(te.flow_ids),
                           tuple(te.terminating_flow_ids), te))

    # descriptors may come later in the file for slice tracks; check at the end
    for uuid, (kind, parent) in tracks.items():
        if parent is not None and parent not in tracks:
            f("error", "track_hierarchy_missing_uuid", None, f"uuid {uuid} parent {parent}")

    events.sort(key=lambda e: (e[0], e[1]))
    stacks = defaultdict(list)  # track -> [ [name, cats, ts, idx, open] ]
    flows = {}  # id -> state: 'active' | 'terminated'
    flow_ends = defaultdict(int)
    for ts, i, track, typ, name, cats, fl, term, te in events:
        if track != 0 and track not in tracks:
            f("error", "track_event_unknown_track_uuid", i, f"unable to resolve track matching UUID {track}")
            continue
        if typ != T_COUNTER and tracks.get(track, ("plain", None))[0] == "counter":
            f("error", "slice_on_counter_track", i, f"uuid {track}")
            continue
        st = stacks[track]
        if typ == T_BEGIN:
            if len([s for s in st if s[4]]) >= MAX_DEPTH:
                f("error", "slice_max_depth_exceeded", i)
                continue
            st.append([name, cats, ts, i, True])
        elif typ == T_END:
            # SliceTracker::MatchingIncompleteSliceIndex: top-down, skip closed,
            # a category on the END must equal the BEGIN's, a name must match
            k = None
            for j in range(len(st) - 1, -1, -1):
                s = st[j]
                if not s[4]:
                    continue
                if cats and (not s[1] or tuple(s[1]) != tuple(cats)):
                    continue
                if name is not None and s[0] is not None and name != s[0]:
                    continue
                k = j
                break
            if k is None:
                if not any(s[4] for s in st):
                    f("error", "end_without_open_slice", i, f"track {track} @ {ts}")
                else:
                    f("error", "end_matches_no_open_slice", i, f"track {track} @ {ts} name={name} cats={cats}")
                continue
            s = st[k]
            if s[2] == ts and s[3] < i and k == len(st) - 1 and len(st) > 1:
                f("warning", "end_after_begin_at_same_ts", i,
                  f"slice {s[0]!r} begun at {ts} is closed with duration 0; if the END was meant for "
                  f"its parent, write the END before the BEGIN")
            s[4] = False
            while st and not st[-1][4]:
                st.pop()
        if typ in (T_BEGIN, T_END, T_INSTANT):
            for fid in fl:
                if flows.get(fid) == "terminated":
                    f("warning", "flow_reused_after_termination", i, f"flow {fid}")
                flows[fid] = "active"
                flow_ends[fid] += 1
            for fid in term:
                if flows.get(fid) != "active":
                    f("error", "flow_terminating_before_start", i, f"flow {fid} is not active at {ts}")
                    continue
                flows[fid] = "terminated"
                flow_ends[fid] += 1
    for track, st in stacks.items():
        for s in st:
            if s[4]:
                f("error", "slice_never_ended", s[3], f"{s[0]!r} on track {track} begun at {s[2]} (dur -1)")
    for fid, n in flow_ends.items():
        if n < 2:
            f("error", "flow_single_endpoint", None, f"flow {fid}")
    return out


def track_events(trace):
    """The track events of @trace in the order the trace processor reads
    them (timestamp, then file order), as (timestamp, packet index, track
    uuid, TrackEvent, name, annotations): the track from the sequence's
    defaults when the event names none, the name's iid resolved on its
    sequence (the literal name, maybe "", when it has no iid), and
    annotations() of the packet."""
    names = defaultdict(dict)
    defaults = {}
    evs = []
    anns = annotations(trace)
    for i, p in enumerate(trace.packet):
        sid = p.trusted_packet_sequence_id
        if p.sequence_flags & SEQ_CLEARED:
            names[sid] = {}
        for n in p.interned_data.event_names:
            names[sid][n.iid] = n.name
        if p.HasField("trace_packet_defaults"):
            defaults[sid] = p.trace_packet_defaults.track_event_defaults.track_uuid
        if p.HasField("track_event"):
            te = p.track_event
            track = te.track_uuid if te.HasField("track_uuid") else defaults.get(sid, 0)
            name = names[sid].get(te.name_iid) if te.HasField("name_iid") else te.name
            evs.append((p.timestamp, i, track, te, name, anns[i]))
    evs.sort(key=lambda e: (e[0], e[1]))
    return evs


def annotations(trace):
    """Per packet, its track event's top-level debug annotations as {name:
    value} with interned names resolved on the packet's sequence (None for
    a packet without a track event; an unresolved iid becomes the key
    "?iid N"), following the interning rules check() applies."""
    names = defaultdict(dict)
    out = []
    for p in trace.packet:
        sid = p.trusted_packet_sequence_id
        if p.sequence_flags & SEQ_CLEARED or p.incremental_state_cleared:
            names[sid] = {}
        for n in p.interned_data.debug_annotation_names:
            names[sid][n.iid] = n.name
        if not p.HasField("track_event"):
            out.append(None)
            continue
        d = {}
        for a in p.track_event.debug_annotations:
            k = (names[sid].get(a.name_iid, f"?iid {a.name_iid}") if a.HasField("name_iid") else a.name)
            v = a.WhichOneof("value")
            d[k] = getattr(a, v) if v else None
        out.append(d)
    return out


def verdict(findings):
    sev = {x.severity for x in findings}
    for s in ("fatal", "error", "warning"):
        if s in sev:
            return s
    return "ok"


def compile_proto(src, tmp):
    """Our .proto (viewer-export/perfetto/protos under @src) compiled by
    protoc into @tmp/pb2 and imported: the perfetto_trace_subset_pb2 module."""
    pb2 = os.path.join(tmp, "pb2")
    os.makedirs(pb2, exist_ok=True)
    subprocess.run(["protoc", "-I", os.path.join(src, "viewer-export/perfetto/protos"), "--python_out=" + pb2,
                    "perfetto_trace_subset.proto"], check=True)
    sys.path.insert(0, pb2)
    import perfetto_trace_subset_pb2  # noqa: E402
    return perfetto_trace_subset_pb2


def load(pb2_dir, path):
    sys.path.insert(0, pb2_dir)
    import perfetto_trace_subset_pb2 as pb  # noqa: E402
    t = pb.Trace()
    with open(path, "rb") as fh:
        t.ParseFromString(fh.read())
    return t


if __name__ == "__main__":
    ptz = "--ptz" in sys.argv[1:]
    args = [a for a in sys.argv[1:] if a != "--ptz"]
    if len(args) != 2:
        sys.exit(__doc__)
    fs = check(load(args[0], args[1]), ptz=ptz)
    for x in fs:
        print(f"{x.severity}: {x.rule} (packet {x.packet}) {x.msg}")
    v = verdict(fs)
    print(f"verdict: {v}")
    sys.exit({"ok": 0, "warning": 0, "error": 1, "fatal": 2}[v])
