"""Match listeners: fan-out per query, slow listeners cut off, closing."""

from __future__ import annotations

from rsep.plugin.service.listeners import MatchListeners


def test_each_subscriber_of_a_query_gets_its_records_in_order():
    listeners = MatchListeners()
    one, two, other = listeners.subscribe("q1"), listeners.subscribe("q1"), listeners.subscribe("q2")
    listeners.publish("q1", [{"n": 1}, {"n": 2}])
    assert [one.get(0), one.get(0), one.get(0)] == [{"n": 1}, {"n": 2}, None]
    assert two.get(0) == {"n": 1} and other.get(0) is None
    assert listeners.count("q1") == 2


def test_a_listener_too_far_behind_is_cut_off():
    listeners = MatchListeners(limit=3)
    slow = listeners.subscribe("q")
    listeners.publish("q", [{"n": 1}, {"n": 2}])
    listeners.publish("q", [{"n": 3}, {"n": 4}])
    assert slow.overflowed and slow.closed
    assert [slow.get(0), slow.get(0), slow.get(0)] == [{"n": 1}, {"n": 2}, None]  # what it had, then the end


def test_closing_ends_subscriptions_of_one_query_or_all():
    listeners = MatchListeners()
    a, b = listeners.subscribe("q1"), listeners.subscribe("q2")
    listeners.close("q1")
    assert a.closed and not b.closed and a.get(timeout=5) is None
    listeners.close()
    assert b.closed and listeners.count("q2") == 0


def test_a_closed_subscription_is_unsubscribed():
    listeners = MatchListeners()
    subscription = listeners.subscribe("q")
    subscription.close()
    listeners.publish("q", [{"n": 1}])
    assert listeners.count("q") == 0 and subscription.get(0) is None
