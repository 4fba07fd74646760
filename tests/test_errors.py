"""One error root (rsep.plugin.errors): every exception class rsep defines derives from `RsepError`
through one of the kinds the edges map, and no two share a name."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections import Counter

import pytest

import rsep
from rsep.endpoint.http_errors import ApiError
from rsep.plugin import errors

KINDS = (
    errors.InvalidInput,
    errors.NotFoundError,
    errors.Unrepresentable,
    errors.RemoteFailure,
    errors.EngineUnavailable,
    errors.EngineFailure,
    errors.StorageFailure,
    errors.InternalError,
)


def defined_exceptions() -> list[type[BaseException]]:
    found = []
    for module in pkgutil.walk_packages(rsep.__path__, "rsep."):
        loaded = importlib.import_module(module.name)
        for _, value in inspect.getmembers(loaded, inspect.isclass):
            if issubclass(value, BaseException) and value.__module__ == loaded.__name__:
                found.append(value)
    return found


EXCEPTIONS = defined_exceptions()


def test_rsep_defines_its_errors():
    assert len(EXCEPTIONS) > 30


@pytest.mark.parametrize("kind", EXCEPTIONS, ids=lambda kind: f"{kind.__module__}.{kind.__name__}")
def test_every_error_has_the_root_and_one_kind(kind):
    assert issubclass(kind, errors.RsepError)
    if issubclass(kind, ApiError):  # the HTTP layer's own errors carry their status
        return
    if kind is not errors.RsepError and kind not in KINDS:
        assert any(issubclass(kind, each) for each in KINDS), f"{kind} picks no kind of rsep.plugin.errors"


def test_no_two_error_classes_share_a_name():
    names = Counter(kind.__name__ for kind in EXCEPTIONS)
    assert [name for name, count in names.items() if count > 1] == []


def test_each_kind_maps_to_its_own_status():
    statuses = [kind.http_status for kind in KINDS if kind is not errors.InternalError]
    assert statuses == [400, 404, 406, 502, 503, 500, 507]
    assert {kind.exit_status for kind in KINDS} == {2}
