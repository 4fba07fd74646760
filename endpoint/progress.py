"""Progress of `rsep run` and `rsep post` on a terminal: events read or posted (a window query's
evaluations), their rate and the time elapsed, drawn by tqdm on stderr.

Drawn only when a person watches: stdout and stderr both terminals and no `--quiet`. Output that
goes to a file or a pipe (`rsep run ... > matches.jsonl`, a script) stays exactly what it was, and
stderr keeps its one-line errors. The bar is cleared before each batch of matches is printed, so
matches and the bar never share a line.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import Any, TextIO, TypeVar

from tqdm import tqdm

# No monitor thread: `rsep run` forks its reader (rsep.plugin.prefetch) only from a single thread.
tqdm.monitor_interval = 0

T = TypeVar("T")


def wanted(quiet: bool, out: TextIO | None = None, err: TextIO | None = None) -> bool:
    """Whether to draw: not `--quiet`, and both standard streams are terminals."""
    out, err = out or sys.stdout, err or sys.stderr
    return not quiet and _isatty(out) and _isatty(err)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # closed or replaced streams
        return False


class Progress:
    """A counter of events with a rate; does nothing when not `enabled`."""

    def __init__(
        self, enabled: bool, description: str, total: int | None = None, unit: str = "events"
    ) -> None:
        self._bar: Any = None
        if enabled:
            self._bar = tqdm(total=total, desc=description, unit=f" {unit}", unit_scale=True,
                             file=sys.stderr, dynamic_ncols=True, leave=True)  # fmt: skip

    def set_total(self, total: int) -> None:
        if self._bar is not None:
            self._bar.total = total
            self._bar.refresh()

    def add(self, count: int) -> None:
        if self._bar is not None:
            self._bar.update(count)

    def counted(self, items: Iterable[T]) -> Iterator[T]:
        """The items, each counted as it passes."""
        for item in items:
            self.add(1)
            yield item

    def clear(self) -> None:
        """Take the bar off the line (before other output); the next update draws it again."""
        if self._bar is not None:
            self._bar.clear()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
