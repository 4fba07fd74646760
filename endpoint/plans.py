"""The plans of registered queries, compiled once per text, and large ones out of the server.

A registration used to be compiled three or four times in the server: by `POST /queries` to
refuse a bad query, by the split engine to tell a window query from an event pattern, and by the
engine that runs it. A plan is a pure function of the text and its options (frozen, no store
state: the knowledge base is read when the plan runs), so the last `CACHED` plans (of texts of
`CACHED_CHARACTERS` in all: a plan takes some ten times its text) are kept and each later compile
of the same registration is a lookup; the plan of a running query is the engine's anyway.

rsep's grammar is pure Python: a text of a megabyte takes it seconds, and on a thread that time
is taken from the server's other threads (ingest among them), which wait for the interpreter's
lock every few milliseconds. A text over `CHILD_SIZE` is therefore compiled in a forked child
(`rsep.plugin.service.query_child`, as SPARQL queries are) and its plan, which pickles, comes
back whole; where no child can run, or under `CHILD_SIZE`, it is compiled in-process as before.
(bench/bench_register.py measures ingest while a large query registers.)
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

from rsep.compiler import Plan, compile_text
from rsep.plugin import (
    ChildLimits,
    ChildTimeout,
    ChildUnavailable,
    CompileError,
    child_available,
    run_in_child,
)

LOG = logging.getLogger(__name__)

CACHED = 16
CACHED_CHARACTERS = 4 * 1024 * 1024
CHILD_SIZE = 64 * 1024
"""Characters above which a text is compiled in a child (a few tenths of a second of parsing)."""
CHILD_SECONDS = 600.0
"""Time a child may take: a megabyte of the slowest shapes compiles in about 15 s here."""

Key = tuple[str, str | None, str | None, str | None, str | None, int | None]

_plans: OrderedDict[Key, Plan] = OrderedDict()
_lock = threading.Lock()


def compiled(
    text: str,
    dialect: str | None,
    options: Mapping[str, str],
    match_limit: int | None,
    *,
    in_child: bool = True,
    cancelled: Callable[[], bool] = lambda: False,
    timeout: float = CHILD_SECONDS,
    slot: Callable[[], AbstractContextManager[None]] = nullcontext,
) -> Plan:
    """`compile_text` of a registration (its `dialect`, or None to detect it; its policy,
    entailment and base in `options`), from the cache when it was compiled before; a large text
    in a child unless `in_child` is False (`rsep serve --query-isolation thread`), within
    `slot()` (a query slot: children are capped as queries are), killed when `cancelled()` (its
    client left: ChildCancelled) or after `timeout` seconds (a 400)."""
    key = _key(text, dialect, options, match_limit)
    with _lock:
        found = _plans.get(key)
        if found is not None:
            _plans.move_to_end(key)
            return found
    plan = _compile(text, dialect, options, match_limit, _Child(in_child, cancelled, timeout, slot))
    with _lock:
        _plans[key] = plan
        # named by the dialect it was found in, as the registry stores it: the engines' key
        _plans[_key(text, plan.query.dialect.name, options, match_limit)] = plan
        while len(_plans) > CACHED or sum(len(key[0]) for key in _plans) > CACHED_CHARACTERS:
            _plans.popitem(last=False)
    return plan


def _key(text: str, dialect: str | None, options: Mapping[str, str], match_limit: int | None) -> Key:
    return (text, dialect, options.get("policy"), options.get("entailment"), options.get("base"), match_limit)


def _compile(
    text: str,
    dialect: str | None,
    options: Mapping[str, str],
    match_limit: int | None,
    child: _Child,
) -> Plan:
    def work() -> Plan:
        return compile_text(
            text,
            dialect=dialect,
            policy=options.get("policy"),
            entailment=options.get("entailment"),
            base=options.get("base"),
            match_limit=match_limit,
        )

    if not child.wanted or len(text) <= CHILD_SIZE or not child_available():
        return work()
    try:
        with child.slot():
            return run_in_child(work, lambda: None, ChildLimits(child.timeout, child.cancelled))
    except ChildTimeout:
        raise CompileError(
            f"compiling the query took over {child.timeout:g} s and was stopped (rsep serve "
            "--query-timeout; split it into smaller queries)"
        ).located("query") from None
    except ChildUnavailable as why:
        LOG.warning("a query of %d characters is compiled in the server's process: %s", len(text), why)
        return work()


@dataclass(frozen=True)
class _Child:
    """How a large text is compiled (`compiled`'s arguments)."""

    wanted: bool
    cancelled: Callable[[], bool]
    timeout: float
    slot: Callable[[], AbstractContextManager[None]]
