"""Event files read as they stream (rsep.plugin.store.event_reader): the same events as reading
them whole, in time order, whatever the layout of graphs and timestamps; bounded memory; clear
errors for what cannot stream."""

from __future__ import annotations

import random
import tracemalloc
from pathlib import Path

import pyoxigraph as ox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.numbering import number_events, number_stream
from rsep.plugin.store import event_reader
from rsep.plugin.store.event_reader import parse_events, read_event_file, stream_event_file
from rsep.plugin.store.rdfio import DataError

REPO = Path(__file__).resolve().parents[2]
PROV = "<http://www.w3.org/ns/prov#generatedAtTime>"
STARTED = "<http://www.w3.org/ns/prov#startedAtTime>"
DECIMAL = "<http://www.w3.org/2001/XMLSchema#decimal>"


def event_files() -> list[Path]:
    found = [
        p for p in sorted((REPO / "tests").rglob("*.trig")) + sorted((REPO / "examples").rglob("*.trig"))
    ]
    return [p for p in found if "kb" not in p.name and "schema" not in p.name and "static" not in p.name]


def whole(path: Path) -> list[GraphEvent]:
    return parse_events(path.read_bytes(), ox.RdfFormat.TRIG, "urn:s", source=str(path), scope="s0",
                        base_iri=path.resolve().as_uri())  # fmt: skip


@pytest.mark.parametrize("path", event_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_a_file_streams_to_the_events_of_reading_it_whole(path: Path):
    try:
        expected = whole(path)
    except DataError:
        pytest.skip("not an event file")
    assert read_event_file(path, "urn:s", scope="s0") == expected


def _graph(i: int, blank: bool = False) -> str:
    return f"_:e{i}" if blank else f"<urn:e{i}>"


def _layout(times: list[float], layout: str) -> str:
    graphs = [
        f'{_graph(i)} {{ <urn:x{i}> <urn:p> "{i}" . <urn:x{i}> <urn:q> _:b{i} . }}\n'
        for i in range(len(times))
    ]
    stamps = [f'{_graph(i)} {PROV} "{t}"^^{DECIMAL} .\n' for i, t in enumerate(times)]
    if layout == "stamp after":
        return "".join(g + s for g, s in zip(graphs, stamps, strict=True))
    if layout == "stamp before":
        return "".join(s + g for g, s in zip(graphs, stamps, strict=True))
    if layout == "stamps last":
        return "".join(graphs) + "".join(stamps)
    assert layout == "stamps first"
    return "".join(stamps) + "".join(graphs)


@pytest.mark.parametrize("layout", ["stamp after", "stamp before", "stamps last", "stamps first"])
def test_every_layout_of_graphs_and_timestamps_gives_the_same_events(tmp_path, monkeypatch, layout):
    monkeypatch.setattr(event_reader, "REORDER_WINDOW", 2)
    monkeypatch.setattr(event_reader, "CHUNK_QUADS", 7)
    times = [1.0, 2.0, 2.0, 3.0, 5.0, 8.0, 8.0, 9.0]
    path = tmp_path / "events.trig"
    path.write_text(_layout(times, "stamp after"))
    expected = read_event_file(path, "urn:s", scope="s0")
    path.write_text(_layout(times, layout))
    assert read_event_file(path, "urn:s", scope="s0") == expected
    assert [e.time.seconds for e in expected] == times
    assert expected[0].ntriples == '<urn:x0> <urn:p> "0" .\n<urn:x0> <urn:q> _:s0xb0 .\n'


def test_events_a_little_out_of_order_are_sorted_and_further_is_an_error_at_the_timestamp(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(event_reader, "REORDER_WINDOW", 3)
    path = tmp_path / "events.trig"
    path.write_text(_layout([2.0, 1.0, 3.0, 5.0, 4.0, 6.0], "stamp after"))
    assert [e.time.seconds for e in read_event_file(path, "urn:s", scope="s0")] == [1, 2, 3, 4, 5, 6]
    path.write_text(_layout([5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 1.0], "stamp after"))
    with pytest.raises(DataError) as error:
        read_event_file(path, "urn:s", scope="s0")
    assert (error.value.line, error.value.column) == (14, 1)  # `<urn:e6> prov:generatedAtTime "1.0"`
    assert "comes after events of later times" in str(error.value) and "sort the file" in str(error.value)


def test_a_graph_written_again_after_its_event_was_read_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setattr(event_reader, "REORDER_WINDOW", 1)
    path = tmp_path / "events.trig"
    text = _layout([1.0, 2.0, 3.0, 4.0], "stamp after") + '<urn:e0> { <urn:late> <urn:p> "x" . }\n'
    path.write_text(text)
    with pytest.raises(DataError, match="event graph <urn:e0> is written in two places"):
        read_event_file(path, "urn:s", scope="s0")


def test_an_event_without_triples_keeps_its_place_in_time(tmp_path, monkeypatch):
    monkeypatch.setattr(event_reader, "REORDER_WINDOW", 1)
    path = tmp_path / "events.trig"
    text = (
        _layout([1.0, 2.0], "stamp after")
        + f'<urn:empty> {PROV} "2.5"^^{DECIMAL} .\n'
        + _layout([3.0], "stamp after").replace("e0", "e9")
    )
    path.write_text(text)
    events = read_event_file(path, "urn:s", scope="s0")
    assert [(e.name, e.time.seconds) for e in events] == [
        ("<urn:e0>", 1.0), ("<urn:e1>", 2.0), ("<urn:empty>", 2.5), ("<urn:e9>", 3.0)
    ]  # fmt: skip
    assert events[2].ntriples == ""


def test_blank_nodes_are_renamed_per_document_and_unlabelled_ones_numbered_in_order(tmp_path):
    path = tmp_path / "events.trig"
    path.write_text(f'_:g {{ [] <urn:p> _:x . _:x <urn:q> [] . }}\n_:g {PROV} "1"^^{DECIMAL} .\n')
    (event,) = read_event_file(path, "urn:s", scope="file 7")
    assert event.name == "_:file7xg"
    assert event.ntriples == "_:file7a0 <urn:p> _:file7xx .\n_:file7xx <urn:q> _:file7a1 .\n"


def test_an_interval_start_is_read_wherever_it_is_written_beside_its_event(tmp_path, monkeypatch):
    monkeypatch.setattr(event_reader, "REORDER_WINDOW", 1)
    path = tmp_path / "events.trig"
    lines = [
        f'<urn:a> {STARTED} "0.5"^^{DECIMAL} .',
        '<urn:a> { <urn:s> <urn:p> "1" . }',
        f'<urn:a> {PROV} "1"^^{DECIMAL} .',
        '<urn:b> { <urn:s> <urn:p> "2" . }',
        f'<urn:b> {PROV} "2"^^{DECIMAL} .',
        f'<urn:b> {STARTED} "1.5"^^{DECIMAL} .',
        '<urn:c> { <urn:s> <urn:p> "3" . }',
        f'<urn:c> {PROV} "3"^^{DECIMAL} .',
    ]
    path.write_text("\n".join(lines) + "\n")
    events = read_event_file(path, "urn:s", scope="s0")
    starts = [(e.name, e.start and e.start.seconds) for e in events]
    assert starts == [("<urn:a>", 0.5), ("<urn:b>", 1.5), ("<urn:c>", None)]


def test_reading_a_long_file_holds_a_window_of_events_not_the_file(tmp_path, monkeypatch):
    monkeypatch.setattr(event_reader, "CHUNK_QUADS", 2000)

    def peak(count: int) -> int:
        path = tmp_path / f"long{count}.trig"
        path.write_text(_layout([float(i) for i in range(count)], "stamp after"))
        tracemalloc.start()
        seen = sum(1 for _ in stream_event_file(path, "urn:s", scope="s0"))
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert seen == count
        return peak

    small, large = peak(10_000), peak(60_000)
    assert large < 2 * small, (small, large)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 6), max_size=8), min_size=1, max_size=4))
def test_numbering_as_the_events_come_is_numbering_them_whole(times: list[list[int]]):
    sources = [
        [
            GraphEvent(f"urn:s{s}", f"<urn:e{s}-{i}>", Timestamp(t, str(t), True), "")
            for i, t in enumerate(sorted(ts))
        ]
        for s, ts in enumerate(times)
    ]
    assert list(number_stream([iter(s) for s in sources])) == number_events(sources)


def test_shuffled_ties_keep_the_order_of_the_file(tmp_path):
    rng = random.Random(3)
    times = sorted(rng.choice([1.0, 2.0, 3.0]) for _ in range(30))
    path = tmp_path / "ties.trig"
    path.write_text(_layout(times, "stamp after"))
    names = [e.name for e in read_event_file(path, "urn:s", scope="s0")]
    assert names == [f"<urn:e{i}>" for i in range(30)]


# ---------------------------------------------------------------------- bounded lateness in seconds


def _timed_file(tmp_path: Path, times: list[float]) -> Path:
    lines = [
        f'<urn:e{i}> {{ <urn:x{i}> <urn:p> "{i}" . }}\n<urn:e{i}> {PROV} "{t}"^^{DECIMAL} .\n'
        for i, t in enumerate(times)
    ]
    path = tmp_path / f"late-{len(times)}-{abs(hash(tuple(times)))}.trig"
    path.write_text("".join(lines))
    return path


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 400), min_size=1, max_size=120),
    st.integers(0, 30),
    st.randoms(use_true_random=False),
)
def test_within_the_lateness_a_file_streams_to_its_events_in_time_order(
    tmp_path_factory, times, lateness, rng
):
    """Any order in which no event comes after one more than `lateness` seconds newer than it
    reads as the file sorted by time (equal times in the order written)."""
    ordered = sorted(times)
    shuffled: list[int] = []
    for t in ordered:  # each event moved back past newer ones, no further than the lateness allows
        slot = len(shuffled)
        while (
            slot > 0 and shuffled[slot - 1] > t and shuffled[slot - 1] - t <= lateness and rng.random() < 0.7
        ):
            slot -= 1
        shuffled.insert(slot, t)
    assert all(max(shuffled[: i + 1]) - t <= lateness for i, t in enumerate(shuffled))
    path = _timed_file(tmp_path_factory.mktemp("late"), [float(t) for t in shuffled])
    streamed = list(stream_event_file(path, "urn:s", scope="s0", lateness=float(lateness)))
    assert streamed == whole(path)


def test_an_event_later_than_the_lateness_is_refused_at_its_timestamp(tmp_path):
    path = _timed_file(tmp_path, [0.0, 1.0, 2.0, 10.0, 11.0, 4.0, 12.0])  # 4 is 7 s late
    late = r"<urn:e5> at 4.0 is late: .*newest time read \(11.0\) less --max-lateness 5 s"
    with pytest.raises(DataError, match=late) as error:
        list(stream_event_file(path, "urn:s", scope="s0", lateness=5.0))
    assert error.value.line == 12  # its timestamp's line
    assert [e.name for e in stream_event_file(path, "urn:s", scope="s0", lateness=7.0)] == [
        f"<urn:e{i}>" for i in (0, 1, 2, 5, 3, 4, 6)
    ]
