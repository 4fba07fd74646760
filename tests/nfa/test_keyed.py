"""The per-key step every driver calls (rsep.plugin.nfa.keyed)."""

from __future__ import annotations

import dataclasses

from rsep.plugin.nfa.keyed import copy_nfa
from rsep.plugin.nfa.runtime import NfaState


def test_the_copy_of_an_nfa_state_copies_every_field():
    """`copy_nfa` must follow `NfaState`: a field it forgets would be shared with (and changed
    through) the committed state by the tentative open rank, or be missing in the copy."""
    original = NfaState()
    for f in dataclasses.fields(NfaState):
        value = getattr(original, f.name)
        if isinstance(value, dict):
            value[7] = ["x"]
        elif isinstance(value, list):
            value.append("x")
        elif isinstance(value, int):
            setattr(original, f.name, 7)
        else:
            raise AssertionError(f"NfaState.{f.name}: teach copy_nfa (and this test) about it")
    copy = copy_nfa(original)
    for f in dataclasses.fields(NfaState):
        mine, theirs = getattr(copy, f.name), getattr(original, f.name)
        assert mine == theirs, f.name
        if isinstance(mine, dict):
            assert mine is not theirs and all(mine[k] is not theirs[k] for k in mine), f.name
        if isinstance(mine, list):
            assert mine is not theirs, f.name
