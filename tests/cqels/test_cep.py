"""CQELS-CEP queries through `rsep run --engine inprocess` (endpoint.replay.run): SEQ inside a
window with a negated element in the middle (SEQ_WO), first (NO_HEAD) or last (NO_TAIL), SEQ over
windows, JOIN of event clauses by interval intersection with the background data. Each case
states its evaluations (content change: every event time) and the expected lines exactly."""

from __future__ import annotations

import pytest

from rsep.endpoint.run_command import RunRequest, StreamFile, run
from rsep.plugin.windows import WindowPlanError
from tests.cqels.support import PREFIX, S, lines, window_query
from tests.support.run_cases import run_inline

R = "http://example.org/r"


def events(*items: tuple[float, str]) -> str:
    """TriG events: (time, triples in Turtle with the `:` prefix)."""
    return "".join(
        f":e{i} {{ {body} }} :e{i} prov:generatedAtTime {t} .\n" for i, (t, body) in enumerate(items)
    )


KV = {"x": "k", "y": "v"}
SEQ_WO = "{?x :a ?y}, !{?x :n ?z}, {?x :b ?y}"


@pytest.mark.parametrize(
    ("negative", "expected"),
    [
        (1, [(6, 2, 6, KV)]),  # before the left element ends: outside [t2, t5]
        (2, []),  # at t2 (the left element's own time): within [2, 6]
        (4, []),
        (6, []),  # at t5
        (7, [(6, 2, 6, KV), (7, 2, 6, KV)]),  # after t5: reported at 6 and again at 7
    ],
    ids=["before", "at-t2", "between", "at-t5", "after"],
)
def test_seq_wo_in_a_window(tmp_path, negative, expected):
    stream = events((2, ":k :a :v ."), (negative, ":k :n :z ."), (6, ":k :b :v ."))
    assert lines(tmp_path, window_query(SEQ_WO), stream) == expected


def test_seq_wo_negative_of_another_key_does_not_block(tmp_path):
    stream = events((2, ":k :a :v ."), (4, ":other :n :z ."), (6, ":k :b :v ."))
    assert lines(tmp_path, window_query(SEQ_WO), stream) == [(6, 2, 6, KV)]


NO_HEAD = "!{?x :n ?z}, {?x :a ?y}, {?x :b ?y}"


@pytest.mark.parametrize(
    ("window", "negative", "expected"),
    [
        ("[RANGE 10s]", 3, []),  # ends before the sequence starts (3 < 4)
        ("[RANGE 10s]", 4, [(6, 4, 6, KV)]),  # at the start: not before it
        ("[RANGE 10s]", 5, [(6, 4, 6, KV)]),  # inside: NO_HEAD only looks before
        ("[RANGE 3s]", 3, [(6, 4, 6, KV)]),  # (3, 6]: the negative has left the window
    ],
    ids=["before-start", "at-start", "inside", "expired"],
)
def test_no_head_in_a_window(tmp_path, window, negative, expected):
    stream = events((negative, ":k :n :z ."), (4, ":k :a :v ."), (6, ":k :b :v ."))
    assert lines(tmp_path, window_query(NO_HEAD, window), stream) == expected


NO_TAIL = "{?x :a ?y}, {?x :b ?y}, !{?x :n ?z}"


@pytest.mark.parametrize(
    ("negative", "expected"),
    [
        (3, [(4, 2, 4, KV)]),  # inside the sequence: NO_TAIL only looks after its end
        (4, [(4, 2, 4, KV)]),  # at its end: t2 < t3 fails, not after it
        (5, [(4, 2, 4, KV)]),  # after: reported at 4, no longer at 5 (t4 <= t)
    ],
    ids=["inside", "at-end", "after"],
)
def test_no_tail_is_decided_at_each_evaluation(tmp_path, negative, expected):
    stream = events((2, ":k :a :v ."), (negative, ":k :n :z ."), (4, ":k :b :v ."))
    assert lines(tmp_path, window_query(NO_TAIL), stream) == expected


def test_no_tail_answer_comes_back_when_the_negative_expires(tmp_path):
    """The window (t - 3s, t] forgets a, b and the negative in turn; the sequence a(2) b(4) dies
    with a at 5, and a later a(6) b(7) sequence has no negative after it."""
    stream = events(
        (2, ":k :a :v ."), (4, ":k :b :v ."), (4.5, ":k :n :z ."), (6, ":k :a :v ."), (7, ":k :b :v .")
    )
    found = lines(tmp_path, window_query(NO_TAIL, "[RANGE 3s]"), stream)
    assert found == [(4, 2, 4, KV), (7, 6, 7, KV)]


@pytest.mark.parametrize(
    ("reports", "vehicles"),
    [("[RANGE 10s]", ["v2"]), ("[RANGE 2s]", ["v1", "v2"])],
    ids=["report-in-window", "report-expired"],
)
def test_seq_over_windows_with_a_negated_window(tmp_path, reports, vehicles):
    """SEQ(:d, !:r, :d): two delays of one vehicle with no report of it in between, the report
    window over another stream with its own range. At t = 5 a 2s report window (3, 5] no longer
    holds the report at 3, so it blocks nothing."""
    query = (
        f"{PREFIX}SELECT ?v FROM NAMED WINDOW :d ON <{S}> [RANGE 10s] "
        f"FROM NAMED WINDOW :r ON <{R}> {reports}\n"
        "WHERE { SEQ(:d, !:r, :d) WINDOW :d { ?v :delay ?s } WINDOW :r { ?v :report ?o } }"
    )
    delays = events(
        (1, ":v1 :delay :s ."), (5, ":v1 :delay :s ."), (1, ":v2 :delay :s ."), (5, ":v2 :delay :s .")
    )
    out = run_inline(tmp_path, query, {S: delays, R: events((3, ":v1 :report :o ."))})
    found = [(line["time"], line["start"], line["end"], line["bindings"]["v"]) for line in out]
    assert found == [(5, 1, 5, f"<http://example.org/{v}>") for v in vehicles]


def test_clauses_join_by_interval_intersection_with_the_background(tmp_path):
    """JOIN([[A]], [[B]]): a report [t, t] joins a delay sequence [t1, t2] when t1 <= t <= t2, and
    the result's interval is the intersection; ?o must be an inspector in the static data."""
    query = (
        f"{PREFIX}SELECT ?v ?o FROM <http://example.org/kb> "
        f"FROM NAMED WINDOW :d ON <{S}> [RANGE 10s] FROM NAMED WINDOW :r ON <{R}> [RANGE 10s]\n"
        "WHERE { WINDOW :d { SEQ({?v :delay ?s}, {?v :delay ?s}) } WINDOW :r { ?v :report ?o } "
        "?o a :Inspector }"
    )
    delays = events((1, ":v1 :delay :s ."), (5, ":v1 :delay :s ."))
    reports = events((3, ":v1 :report :o1 ."), (4, ":v1 :report :o3 ."), (6, ":v1 :report :o2 ."))
    kb = {"http://example.org/kb": ":o1 a :Inspector . :o2 a :Inspector ."}
    out = run_inline(tmp_path, query, {S: delays, R: reports}, kb)
    found = [(line["time"], line["start"], line["end"], line["bindings"]["o"]) for line in out]
    # o3 is no inspector; o2 at 6 lies after the sequence [1, 5]: max(1, 6) > min(5, 6)
    assert found == [(5, 3, 3, "<http://example.org/o1>"), (6, 3, 3, "<http://example.org/o1>")]


@pytest.mark.parametrize(
    ("window", "expected"),
    [
        ("[TRIPLES 2]", [(2, 1, 2)]),  # at 3 and 4 the last two triples are b, c and c, b
        ("[ALL]", [(2, 1, 2), (3, 1, 2), (4, 1, 2), (4, 1, 4)]),
        ("[NOW]", []),  # one instant never holds a sequence
        ("[RANGE 4s SLIDE 2s]", [(2, 1, 2), (3, 1, 2), (4, 1, 2), (4, 1, 4)]),  # at 3, t' = 2
    ],
)
def test_every_window_kind_feeds_the_sequence(tmp_path, window, expected):
    stream = events((1, ":k :a :v ."), (2, ":k :b :v ."), (3, ":k :c :v ."), (4, ":k :b :v ."))
    found = lines(tmp_path, window_query("{?x :a ?y}, {?x :b ?y}", window), stream)
    assert [(time, start, end) for time, start, end, _ in found] == expected


def test_ask_and_construct_report_the_window_bounds(tmp_path):
    stream = events((1, ":k :a :v ."), (2, ":k :b :v ."))
    seq = "WHERE { WINDOW :w { SEQ({?x :a ?y}, {?x :b ?y}) } }"
    head = f"{PREFIX}%s FROM NAMED WINDOW :w ON <{S}> [RANGE 10s] {seq}"
    ask = run_inline(tmp_path, head % "ASK", {S: stream})
    construct = run_inline(tmp_path, head % "CONSTRUCT { ?x :then ?y }", {S: stream})
    assert ask == [{"start": -8, "end": 2, "bindings": {}}]
    triple = "<http://example.org/k> <http://example.org/then> <http://example.org/v> ."
    assert construct == [{"start": -8, "end": 2, "triples": [triple]}]


def test_aggregates_over_sequences_print_the_window_bounds(tmp_path):
    """Groups carry no interval: a COUNT over the sequences prints the evaluation's window bounds."""
    query = window_query("{?x :a ?y}, {?x :b ?y}", select="(COUNT(*) AS ?n)")
    stream = events((2, ":k :a :v ."), (3, ":k :a :v ."), (4, ":k :b :v ."))
    out = run_inline(tmp_path, query, {S: stream})
    assert [(line["start"], line["end"], line["bindings"]["n"]) for line in out][-1] == (
        -6,
        4,
        '"2"^^<http://www.w3.org/2001/XMLSchema#integer>',
    )


def test_event_blank_nodes_cross_the_values_block(tmp_path):
    """VALUES cannot hold blank nodes: they cross it as skolem IRIs and come back as blank nodes
    (one document's blank node is one node, so both events speak of the same _:b)."""
    stream = events((2, "_:b :a :v ."), (4, "_:b :b :v ."))
    out = run_inline(tmp_path, window_query("{?x :a ?y}, {?x :b ?y}", select="?x"), {S: stream})
    assert len(out) == 1 and out[0]["bindings"]["x"].startswith("_:")


def test_nested_paths_in_a_seq_element_are_rejected(tmp_path):
    query = window_query("{?x :a/[:b] ?y}, {?x :b ?y}")
    (tmp_path / "q.rq").write_text(query, encoding="utf-8")
    (tmp_path / "s.trig").write_text("", encoding="utf-8")
    with pytest.raises(WindowPlanError, match="nested paths"):
        run(RunRequest(tmp_path / "q.rq", [StreamFile(S, tmp_path / "s.trig")], engine="inprocess"))


OPTIONAL_P = "?v a :Subway OPTIONAL { ?v :near ?s }"
CLAUSE = "WINDOW :d { SEQ({?v :at ?s}, {?v :left ?s}) }"


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        # (A OPTIONAL B) JOIN EC (eq. (1), and SPARQL's order): v1 is near s2, so the sequence at
        # s1 does not join; the one at s2 does
        (f"{OPTIONAL_P} {CLAUSE}", [(4, 3, 4, "s2"), (5, 3, 4, "s2")]),
        # (EC JOIN A) OPTIONAL B, as written: both sequences; B adds nothing incompatible
        (
            f"{CLAUSE} {OPTIONAL_P}",
            [
                *[(2, 1, 2, "s1"), (3, 1, 2, "s1"), (4, 1, 2, "s1"), (4, 3, 4, "s2")],
                *[(5, 1, 2, "s1"), (5, 3, 4, "s2")],
            ],
        ),
    ],
    ids=["clauses-after-optional", "clauses-before-optional"],
)
def test_event_clauses_meet_p_where_they_are_written(tmp_path, where, expected):
    query = (
        f"{PREFIX}SELECT ?v ?s FROM <http://example.org/kb> "
        f"FROM NAMED WINDOW :d ON <{S}> [RANGE 10s]\nWHERE {{ {where} }}"
    )
    stream = events(
        (1, ":v1 :at :s1 ."),
        (2, ":v1 :left :s1 ."),
        (3, ":v1 :at :s2 ."),
        (4, ":v1 :left :s2 ."),
        (5, ":x :y :z ."),
    )
    kb = {"http://example.org/kb": ":v1 a :Subway ; :near :s2 ."}
    out = run_inline(tmp_path, query, {S: stream}, kb)
    found = [(line["time"], line["start"], line["end"], line["bindings"]["s"][20:-1]) for line in out]
    assert found == expected
