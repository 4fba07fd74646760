"""CQELS-CEP over interval-stamped input events (HiDeSt 2015, §4.1-4.2): an event with
`prov:startedAtTime S` and `prov:generatedAtTime T` spans [S, T]; SEQ needs the first element to
end strictly before the second starts, SEQ_WO's negative must lie within the closed gap [t2, t5],
NO_TAIL's negative must start strictly after the sequence ends, and w_RANGE clips a held event to
[max(S, t - α), min(T, t)]. Evaluations are content changes (every event's end T); each expected
line is (evaluation time, start, end, bindings), derived by hand from those definitions."""

from __future__ import annotations

import pytest

from tests.cqels.support import lines, window_query

KV = {"x": "k", "y": "v"}
SEQ = "{?x :a ?y}, {?x :b ?y}"


def spans(*items: tuple[float, float, str]) -> str:
    """TriG events: (start S, end T, triples in Turtle with the `:` prefix), in end order."""
    return "".join(
        f":e{i} {{ {body} }} :e{i} prov:generatedAtTime {end} ; prov:startedAtTime {start} .\n"
        for i, (start, end, body) in enumerate(items)
    )


@pytest.mark.parametrize(
    ("b_start", "expected"),
    [
        (3, []),  # [1, 5] and [3, 8] overlap: 5 < 3 fails (as points at their ends, 5 < 8 would match)
        (5, []),  # touching: 5 < 5 fails
        (6, [(8, 1, 8, KV)]),  # 5 < 6: one match over [1, 8], reported at 8
    ],
    ids=["overlapping", "touching", "disjoint"],
)
def test_seq_needs_the_first_interval_to_end_before_the_second_starts(tmp_path, b_start, expected):
    stream = spans((1, 5, ":k :a :v ."), (b_start, 8, ":k :b :v ."))
    assert lines(tmp_path, window_query(SEQ), stream) == expected


SEQ_WO = "{?x :a ?y}, !{?x :n ?z}, {?x :b ?y}"


@pytest.mark.parametrize(
    ("negative", "expected"),
    [
        # The gap is [t2, t5] = [2, 6] (A = [1, 2], B = [6, 7]).
        ((1, 4), [(7, 1, 7, KV)]),  # straddles the gap's start: not within [2, 6] (as a point 4, it is)
        ((3, 5), []),  # within the gap
        ((2, 6), []),  # the whole closed gap
        ((4, 8), [(7, 1, 7, KV), (8, 1, 7, KV)]),  # straddles the gap's end, and arrives after B
    ],
    ids=["straddles-start", "inside", "whole-gap", "straddles-end"],
)
def test_seq_wo_blocks_only_a_negative_whose_interval_lies_within_the_gap(tmp_path, negative, expected):
    items = [(1, 2, ":k :a :v ."), (*negative, ":k :n :z ."), (6, 7, ":k :b :v .")]
    stream = spans(*sorted(items, key=lambda item: item[1]))
    assert lines(tmp_path, window_query(SEQ_WO, "[RANGE 20s]"), stream) == expected


@pytest.mark.parametrize(
    ("negative_start", "expected"),
    [
        (3, [(4, 1, 4, KV), (6, 1, 4, KV)]),  # starts before the sequence's end 4: does not block
        (4, [(4, 1, 4, KV), (6, 1, 4, KV)]),  # starts at 4: not strictly after, does not block
        (5, [(4, 1, 4, KV)]),  # starts after 4 and ends by 6: withdrawn at 6 (as at 4 before it came)
    ],
    ids=["straddles-the-end", "at-the-end", "after-the-end"],
)
def test_no_tail_blocks_only_a_negative_starting_after_the_sequence(tmp_path, negative_start, expected):
    seq = "{?x :a ?y}, {?x :b ?y}, !{?x :n ?z}"
    stream = spans((1, 2, ":k :a :v ."), (3, 4, ":k :b :v ."), (negative_start, 6, ":k :n :z ."))
    assert lines(tmp_path, window_query(seq, "[RANGE 20s]"), stream) == expected


CLIPPED = spans((1, 6, ":k :a :v ."), (7, 8, ":k :b :v ."), (10, 10, ":o :c :o ."))


@pytest.mark.parametrize(
    ("window", "expected"),
    [
        # At 8 the window (3, 8] holds A clipped to [max(1, 3), 6] = [3, 6]: the match is [3, 8];
        # at 10 (the unrelated :c event) (5, 10] clips A to [5, 6]: [5, 8].
        ("[RANGE 5s]", [(8, 3, 8, KV), (10, 5, 8, KV)]),
        ("[RANGE 10s]", [(8, 1, 8, KV), (10, 1, 8, KV)]),  # 8 - 10 < 1: nothing to clip
        ("[ALL]", [(8, 1, 8, KV), (10, 1, 8, KV)]),  # a landmark clips no start
        ("[NOW]", []),  # [RANGE 0]: never holds A and B at once
    ],
    ids=["range-clips", "range-wide", "all", "now"],
)
def test_a_window_clips_the_start_of_an_interval_to_its_lower_bound(tmp_path, window, expected):
    assert lines(tmp_path, window_query(SEQ, window), CLIPPED) == expected


def test_clipping_decides_a_join_of_two_clauses(tmp_path):
    """JOIN (§4.2) intersects the clauses' intervals, clipped ones: at 8 the 5-second window's
    sequence is [3, 8] (A clipped to [3, 6]), the 6-second window (2, 8] holds the :c event [0, 4]
    clipped to [2, 4], and the answer is over [3, 4] (unclipped it would be [1, 4])."""
    stream = spans((0, 4, ":k :c :w ."), (1, 6, ":k :a :v ."), (7, 8, ":k :b :v ."))
    query = (
        "PREFIX : <http://example.org/>\nSELECT ?x ?y ?z\n"
        "FROM NAMED WINDOW :w ON <http://example.org/s> [RANGE 5s]\n"
        "FROM NAMED WINDOW :c ON <http://example.org/s> [RANGE 6s]\n"
        f"WHERE {{ WINDOW :w {{ SEQ({SEQ}) }} WINDOW :c {{ ?x :c ?z }} }}"
    )
    assert lines(tmp_path, query, stream) == [(8, 3, 4, {**KV, "z": "w"})]
