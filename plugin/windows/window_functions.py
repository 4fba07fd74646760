"""RSEP-QL window functions (Dell'Aglio et al., EKAW 2016, Def. 3 and §3.2) over one stream.

A stream here is the time-ordered list of its items' timestamps, in integer
*ticks* (microseconds, so that window arithmetic is exact); a window function
answers, for an evaluation time t, which slice `items[lo:hi]` is in the
window and the window's bounds:

- time-based W^τ(α, β): with t' = ⌊t/β⌋·β, the items with t' − α < t_i ≤ t'
  (bounds (t' − α, t']). β = α is a tumbling window; no β (CQELS `[RANGE α]`)
  slides continuously, t' = t;
- count-based: the last n items with t_i ≤ t (bounds [t_first item, t]);
- landmark W^λ(t0): the items with t0 ≤ t_i ≤ t (bounds [t0, t]);
- now (CQELS `[NOW]`): the items with t_i = t (bounds [t, t]).

Everything here is pure: no RDF, no store.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from rsep.plugin.algebra.events import TICKS_PER_SECOND as TICKS_PER_SECOND  # re-exported
from rsep.plugin.algebra.events import (
    CountWindow,
    Duration,
    LandmarkWindow,
    NowWindow,
    TimeWindow,
    Window,
)


def to_ticks(seconds: float) -> int:
    """Seconds (a Timestamp's or a Duration's) as integer microseconds."""
    return round(seconds * TICKS_PER_SECOND)


def duration_ticks(duration: Duration) -> int:
    return duration.ticks


@dataclass(frozen=True, slots=True)
class Extent:
    """The content of a window at one evaluation time: items[lo:hi], and its bounds as the
    definition writes them (`start` is exclusive for time-based windows, inclusive otherwise)."""

    lo: int
    hi: int
    start: int
    end: int

    @property
    def span(self) -> tuple[int, int]:
        return (self.lo, self.hi)


def time_based(times: Sequence[int], t: int, width: int, slide: int | None) -> Extent:
    """W^τ(α, β)(S, t): t' = ⌊t/β⌋·β and t' − α < t_i ≤ t' (RSEP-QL Def. 3)."""
    close = t if slide is None else (t // slide) * slide
    return Extent(bisect_right(times, close - width), bisect_right(times, close), close - width, close)


def count_based(times: Sequence[int], t: int, size: int) -> Extent:
    """The last `size` items at or before t."""
    hi = bisect_right(times, t)
    lo = max(0, hi - size)
    return Extent(lo, hi, times[lo] if lo < hi else t, t)


def landmark(times: Sequence[int], t: int, origin: int) -> Extent:
    """W^λ(t0)(S, t): t0 ≤ t_i ≤ t."""
    return Extent(bisect_left(times, origin), bisect_right(times, t), origin, t)


def now(times: Sequence[int], t: int) -> Extent:
    """The items stamped exactly t."""
    return Extent(bisect_left(times, t), bisect_right(times, t), t, t)


def extent(window: Window, times: Sequence[int], t: int, origin: int) -> Extent:
    """The content of `window` over a stream with item times `times` at evaluation time t;
    `origin` is the landmark t0 (the first event of the replay)."""
    if isinstance(window, TimeWindow):
        slide = duration_ticks(window.slide) if window.slide is not None else None
        return time_based(times, t, duration_ticks(window.width), slide)
    if isinstance(window, CountWindow):
        return count_based(times, t, window.size)
    if isinstance(window, LandmarkWindow):
        return landmark(times, t, origin)
    assert isinstance(window, NowWindow)
    return now(times, t)


def first_needed(window: Window, times: Sequence[int], after: int) -> int:
    """The index of the first item `window` may hold at an evaluation time later than `after`:
    the items before it are in no later window, so a continuous query forgets them."""
    t = after + 1
    if isinstance(window, TimeWindow):
        step = duration_ticks(window.slide) if window.slide is not None else None
        close = t if step is None else (t // step) * step
        return bisect_right(times, close - duration_ticks(window.width))
    if isinstance(window, CountWindow):
        return max(0, bisect_right(times, t) - window.size)
    if isinstance(window, LandmarkWindow):
        return 0
    assert isinstance(window, NowWindow)
    return bisect_left(times, t)
