"""Push: who listens to which query's matches (the SSE endpoint's feed).

An engine publishes the records of the match graphs it has just *created*
(never those a replay rewrote), so a listener sees each match once. Each
subscription has a bounded queue: a listener that falls `limit` records
behind is cut off (its stream ends) rather than slowing the engine down.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Mapping, Sequence


class Subscription:
    """One listener's queue of match records."""

    def __init__(self, owner: MatchListeners, query_id: str, limit: int) -> None:
        self.query_id = query_id
        self._owner = owner
        self._limit = limit
        self._items: deque[Mapping[str, object]] = deque()
        self._ready = threading.Condition()
        self.closed = False
        self.overflowed = False

    def get(self, timeout: float | None = None) -> Mapping[str, object] | None:
        """The next record; None on timeout or once closed (check `closed`)."""
        with self._ready:
            if not self._items and not self.closed:
                self._ready.wait(timeout)
            return self._items.popleft() if self._items else None

    def close(self) -> None:
        self._owner.unsubscribe(self)
        self._end()

    def _put(self, records: Sequence[Mapping[str, object]]) -> None:
        with self._ready:
            if self.closed:
                return
            if len(self._items) + len(records) > self._limit:
                self.overflowed = True
                self.closed = True
            else:
                self._items.extend(records)
            self._ready.notify_all()

    def _end(self) -> None:
        with self._ready:
            self.closed = True
            self._ready.notify_all()


class MatchListeners:
    """Subscriptions per query id (thread-safe)."""

    def __init__(self, limit: int = 10_000) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._subscriptions: dict[str, set[Subscription]] = {}

    def subscribe(self, query_id: str) -> Subscription:
        subscription = Subscription(self, query_id, self.limit)
        with self._lock:
            self._subscriptions.setdefault(query_id, set()).add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        with self._lock:
            found = self._subscriptions.get(subscription.query_id)
            if found is not None:
                found.discard(subscription)
                if not found:
                    del self._subscriptions[subscription.query_id]

    def publish(self, query_id: str, records: Sequence[Mapping[str, object]]) -> None:
        if not records:
            return
        with self._lock:
            targets = list(self._subscriptions.get(query_id, ()))
        for subscription in targets:
            subscription._put(records)

    def count(self, query_id: str) -> int:
        with self._lock:
            return len(self._subscriptions.get(query_id, ()))

    def close(self, query_id: str | None = None) -> None:
        """End the subscriptions of one query (it was deleted) or of all (shutdown)."""
        with self._lock:
            if query_id is None:
                ended = [s for subs in self._subscriptions.values() for s in subs]
                self._subscriptions.clear()
            else:
                ended = list(self._subscriptions.pop(query_id, ()))
        for subscription in ended:
            subscription._end()
