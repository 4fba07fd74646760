"""RSEP-QL's window functions (Def. 3) and the report policies' evaluation times, on explicit item
times: exact window contents at each evaluation, boundaries included (t' - α < t_i <= t')."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rsep.plugin.algebra.events import (
    CountWindow,
    Duration,
    LandmarkWindow,
    NowWindow,
    TimeUnit,
    TimeWindow,
)
from rsep.plugin.windows.schedule import ContentChange, WindowClose, schedule_end
from rsep.plugin.windows.window_functions import (
    count_based,
    duration_ticks,
    extent,
    landmark,
    now,
    time_based,
    to_ticks,
)

TIMES = [1, 2, 3, 5, 6, 8]


def content(window_extent, times=TIMES):
    return times[window_extent.lo : window_extent.hi]


def seconds(n: float) -> Duration:
    return Duration(n)


# --------------------------------------------------------------------------- window functions


def test_sliding_window_holds_t_prime_minus_alpha_exclusive_to_t_prime_inclusive():
    # W^τ(5, 2) at t = 6: t' = 6, so 1 < t_i <= 6: the item at exactly t' - α (1) is out,
    # the one at exactly t' (6) is in.
    window = time_based(TIMES, 6, 5, 2)
    assert content(window) == [2, 3, 5, 6]
    assert (window.start, window.end) == (1, 6)


def test_sliding_window_between_closes_shows_the_last_close():
    # t = 7 is not a multiple of β = 2: t' = ⌊7/2⌋·2 = 6, the same content as at 6.
    assert time_based(TIMES, 7, 5, 2) == time_based(TIMES, 6, 5, 2)


def test_slide_that_does_not_divide_the_time():
    window = time_based(TIMES, 10, 4, 3)  # t' = 9: 5 < t_i <= 9
    assert content(window) == [6, 8]
    assert (window.start, window.end) == (5, 9)


def test_tumbling_window_partitions_the_stream():
    # β = α = 3: (0, 3], (3, 6], (6, 9] -- each item in exactly one window.
    windows = [content(time_based(TIMES, t, 3, 3)) for t in (3, 6, 9)]
    assert windows == [[1, 2, 3], [5, 6], [8]]


def test_continuous_window_ends_at_the_evaluation_time():
    window = time_based(TIMES, 7, 3, None)  # CQELS [RANGE 3]: 4 < t_i <= 7
    assert content(window) == [5, 6]
    assert (window.start, window.end) == (4, 7)


def test_count_window_holds_the_last_n_items_at_or_before_t():
    window = count_based(TIMES, 5, 2)
    assert content(window) == [3, 5]
    assert (window.start, window.end) == (3, 5)
    assert content(count_based(TIMES, 2, 10)) == [1, 2]
    empty = count_based(TIMES, 0, 2)
    assert content(empty) == [] and (empty.start, empty.end) == (0, 0)


def test_count_window_counts_items_sharing_a_timestamp_one_by_one():
    times = [1, 4, 4, 4]
    assert content(count_based(times, 4, 2), times) == [4, 4]


def test_landmark_window_holds_everything_since_t0():
    window = landmark(TIMES, 6, 2)
    assert content(window) == [2, 3, 5, 6]
    assert (window.start, window.end) == (2, 6)


def test_now_window_holds_the_items_of_the_instant():
    times = [1, 5, 5, 6]
    assert content(now(times, 5), times) == [5, 5]
    assert content(now(times, 4), times) == []


def test_extent_dispatches_on_the_algebra_node():
    assert content(extent(TimeWindow(seconds(5), seconds(2)), [to_ticks(t) for t in TIMES], to_ticks(6), 0),
                   [to_ticks(t) for t in TIMES]) == [to_ticks(t) for t in (2, 3, 5, 6)]  # fmt: skip
    assert extent(CountWindow(2), TIMES, 5, 0) == count_based(TIMES, 5, 2)
    assert extent(LandmarkWindow(), TIMES, 6, 2) == landmark(TIMES, 6, 2)
    assert extent(NowWindow(), TIMES, 5, 0) == now(TIMES, 5)


def test_ticks_are_exact_microseconds():
    assert to_ticks(0.001) == 1000
    assert duration_ticks(Duration(3000, TimeUnit.MILLISECONDS)) == duration_ticks(Duration(3)) == 3_000_000
    assert duration_ticks(Duration(1.5, TimeUnit.MINUTES)) == 90_000_000


# --------------------------------------------------------------------------- evaluation times


def all_points(schedule):
    return [p for start, stop in schedule.segments() for p in schedule.points(start, stop)]


def test_window_close_runs_from_the_first_window_after_t0_to_the_last_close_that_holds_an_item():
    # C-SPARQL [RANGE 300 STEP 60] over events at 10 ... 330, t0 = 10: the first window opening
    # at or after t0 closes at 360 (360 - 300 >= 10 > 300 - 300); the last close is 600, since
    # 600 - 300 < 330 <= 660 - 300.
    times = [10, 40, 70, 330]
    schedule = WindowClose(
        [(TimeWindow(seconds(300), seconds(60)), [to_ticks(t) for t in times])], to_ticks(10)
    )
    assert all_points(schedule) == [to_ticks(c) for c in range(360, 601, 60)]
    # a query registered at 0 (the endpoint's t0 may precede its first event): from 300 on
    early = WindowClose(schedule.windows, to_ticks(10), t0=0)
    assert all_points(early) == [to_ticks(c) for c in range(300, 601, 60)]


def test_a_tumbling_window_evaluates_no_window_opening_before_the_first_event():
    """Issue 16: [RANGE 4s STEP 4s] over events at 0 ... 33 evaluates 9 windows, (0, 4] to
    (32, 36], as the C-SPARQL engine and CSRBench's oracle do; not (-4, 0] first."""
    times = [to_ticks(t) for t in range(34)]
    schedule = WindowClose([(TimeWindow(seconds(4), seconds(4)), times)], times[0])
    assert all_points(schedule) == [to_ticks(c) for c in range(4, 37, 4)]


EARLY = to_ticks(-100)
"""A t0 long before the events: every window of the tests below opens after it (the closes are
then those of the windows alone, as before the first event bounded them)."""


def test_window_close_merges_the_closes_of_every_window():
    # (α 4, β 2) over [1] closes until 4; (α 3, β 3) over [2] until 3; ET = {2, 4} ∪ {3}.
    windows = [
        (TimeWindow(seconds(4), seconds(2)), [to_ticks(1)]),
        (TimeWindow(seconds(3), seconds(3)), [to_ticks(2)]),
    ]
    assert all_points(WindowClose(windows, to_ticks(1), t0=EARLY)) == [to_ticks(t) for t in (2, 3, 4)]
    # from t0 = 1: (α 4, β 2) closes from 5 on and (α 3, β 3) from 4 on, past the last close 4
    assert all_points(WindowClose(windows, to_ticks(1))) == []


def test_a_short_step_window_closes_on_while_a_long_step_window_still_holds_an_item():
    # (α 1, β 1) over [1, 2] holds its last item at its close 2; (α 10, β 2) over [3] at its
    # closes 4 ... 12, and at 13 it still shows its close 12, (2, 12]: 13 is evaluated, 14 not.
    windows = [
        (TimeWindow(seconds(1), seconds(1)), [to_ticks(1), to_ticks(2)]),
        (TimeWindow(seconds(10), seconds(2)), [to_ticks(3)]),
    ]
    assert all_points(WindowClose(windows, to_ticks(1), t0=EARLY)) == [to_ticks(t) for t in range(1, 14)]
    # from t0 = 1: (α 1, β 1) closes from 2 on (up to 13, as before), (α 10, β 2) from 12 on
    assert all_points(WindowClose(windows, to_ticks(1))) == [to_ticks(t) for t in range(2, 14)]
    assert schedule_end(windows) == to_ticks(13)


def test_a_count_window_prolongs_the_schedule_to_its_last_arrival_only():
    # The count window never empties; it holds its items up to its last arrival (9), where the
    # time window's closes stop too although it shows the same 2 triples at 10, 11, ...
    windows = [
        (CountWindow(2), [to_ticks(t) for t in (1, 4, 9)]),
        (TimeWindow(seconds(2), seconds(2)), [to_ticks(1)]),
    ]
    early = WindowClose(windows, to_ticks(1), t0=EARLY)
    assert all_points(early) == [to_ticks(t) for t in (1, 2, 4, 6, 8, 9)]
    # from t0 = 1 the time window's closes start at 4 (4 - 2 >= 1); the count window has no t0
    assert all_points(WindowClose(windows, to_ticks(1))) == [to_ticks(t) for t in (1, 4, 6, 8, 9)]


@settings(max_examples=150, deadline=None)
@given(
    streams=st.lists(st.lists(st.integers(0, 40), max_size=6).map(sorted), min_size=2, max_size=2),
    shapes=st.lists(st.tuples(st.integers(1, 12), st.integers(1, 12)), min_size=2, max_size=2),
)
def test_window_close_runs_to_the_last_close_at_which_some_window_holds_an_item(streams, shapes):
    """Against brute force over two time windows: ET is every close of either window whose window
    opens at or after the first event (t0), up to the last close at which either window's content
    (Def. 3) is not empty."""
    if not any(streams):
        return
    windows = [
        (TimeWindow(seconds(width), seconds(slide)), [to_ticks(t) for t in times])
        for (width, slide), times in zip(shapes, streams, strict=True)
    ]
    first = min(times[0] for times in streams if times)
    closes = sorted(
        {k * slide for width, slide in shapes for k in range(0, 200) if first + width <= k * slide <= 150}
    )
    holding = [c for c in closes if any(holds(w, ticks, to_ticks(c)) for w, ticks in windows)]
    last = max(holding, default=-1)
    assert all_points(WindowClose(windows, to_ticks(first))) == [to_ticks(c) for c in closes if c <= last]


def test_a_close_before_the_one_that_holds_the_last_item_outside_t0_is_not_a_point():
    """Found by the property above: an item at 5 only in [RANGE 4s STEP 4s], t0 = 5. Its window
    (4, 8] opens before t0, so 8 is no point; at [RANGE 1s STEP 6s]'s close 6 no window holds an
    item (the 4 s window shows (0, 4]). Before, 6 was evaluated: the last close before 8."""
    windows = [(TimeWindow(seconds(1), seconds(6)), []), (TimeWindow(seconds(4), seconds(4)), [to_ticks(5)])]
    assert all_points(WindowClose(windows, to_ticks(5))) == []


def holds(window, ticks, t):
    found = extent(window, ticks, t, 0)
    return found.hi > found.lo


def test_count_windows_close_at_each_arrival():
    times = [to_ticks(t) for t in (1, 4, 4, 9)]
    assert all_points(WindowClose([(CountWindow(2), times)], times[0])) == [to_ticks(t) for t in (1, 4, 9)]


def test_no_events_no_evaluations():
    assert all_points(WindowClose([(TimeWindow(seconds(3), seconds(1)), [])], 0)) == []
    assert all_points(WindowClose([(LandmarkWindow(), [1, 2])], 1)) == []


def test_content_change_evaluates_at_each_distinct_event_time():
    schedule = ContentChange([5, 1, 5, 3])
    assert list(schedule.segments()) == [(1, 2), (3, 4), (5, 6)]
    assert all_points(schedule) == [1, 3, 5]


@settings(max_examples=150, deadline=None)
@given(
    times=st.lists(st.integers(0, 60), min_size=1, max_size=12).map(sorted),
    width=st.integers(1, 15),
    slide=st.integers(1, 15),
)
def test_segments_hold_every_close_and_constant_content(times, width, slide):
    """Against brute force: ET is every k·β whose window (k·β - α, k·β] opens at or after the
    first event (t0), up to the last close whose window holds an item, and the content never
    changes inside a segment."""
    window = TimeWindow(seconds(width), seconds(slide))
    ticks = [to_ticks(t) for t in times]
    schedule = WindowClose([(window, ticks)], ticks[0])
    every = [k * slide for k in range(0, 200) if k * slide >= times[0]]
    holding = [c for c in every if any(c - width < t <= c for t in times)]
    closes = [c for c in every if c - width >= times[0]]  # windows open at or after t0
    last = max(holding, default=-1)  # with α < β every item may fall between windows
    assert all_points(schedule) == [to_ticks(c) for c in closes if c <= last]
    for start, stop in schedule.segments():
        spans = {extent(window, ticks, p, ticks[0]).span for p in schedule.points(start, stop)}
        assert len(spans) <= 1
