"""What each atom of the automaton matches at one group, whatever run it meets.

A GPM atom's candidates are its rows whose residual (stateful) filters hold or
must wait for a run's bindings; a conjunction joins its operands' candidates, a
disjunction unions them, and a join group (`JoinAtom`) joins this timestamp's
occurrences of its GPMs with the ones its key remembers (`plugin/nfa/joins.py`).
Candidates are computed once per atom and group (`CandidateCache`), then every
run of every state waiting on the atom meets them (`plugin/nfa/outcomes.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from collections.abc import Sequence as Seq
from dataclasses import fields, is_dataclass

from rsep.plugin.algebra.events import ConsumptionPolicy
from rsep.plugin.algebra.sparql import Aggregate, Exists, FunctionCall
from rsep.plugin.expr import compile_filter
from rsep.plugin.nfa.automaton import (
    Atom,
    Automaton,
    ConjunctionAtom,
    DisjunctionAtom,
    GpmAtom,
    JoinAtom,
    atom_gpms,
)
from rsep.plugin.nfa.joins import (
    Occurrence,
    OccurrenceIndexes,
    expire,
    fresh_occurrences,
    joined_events,
    new_joins,
    remember_rows,
)
from rsep.plugin.nfa.outcomes import join
from rsep.plugin.nfa.runs import Candidate, CandidateCache, Group, Mapping_, Unit


class Candidates:
    """The candidates of each atom at a group, with the automaton's compiled
    residual filters, and the join groups that must see every group."""

    def __init__(self, automaton: Automaton) -> None:
        self.automaton = automaton
        self.within = automaton.within
        self._residuals: list[list[tuple[frozenset[str], Callable[[Mapping[str, str]], bool], bool]]] = [
            [(r.variables, compile_filter(r.expr), pure(r.expr)) for r in filters]
            for filters in automaton.residuals
        ]
        self._timed = any(s.interval for s in automaton.states)
        self._selective = automaton.policy is not ConsumptionPolicy.UNRESTRICTED
        self._joins = {
            a for s in automaton.states for a in (s.atom, *_operands(s.atom)) if isinstance(a, JoinAtom)
        }
        self._joins_by: dict[tuple[int, ...], tuple[JoinAtom, ...]] = {}
        self.join_atoms = {a.memory: a for a in self._joins}
        """Join groups by their memory (`JoinAtom.memory`)."""
        self._occurrences = OccurrenceIndexes()

    def joins_touched(self, gpms: tuple[int, ...]) -> tuple[JoinAtom, ...]:
        """The join groups a group with rows of `gpms` feeds: they must see it even if
        no run waits on them, to remember its occurrences (few distinct sets: cached)."""
        found = self._joins_by.get(gpms)
        if found is None:
            found = self._joins_by[gpms] = tuple(a for a in self._joins if not atom_gpms(a).isdisjoint(gpms))
        return found

    def matches(self, atom: Atom, group: Group, cache: dict[Atom, list[Candidate]]) -> list[Candidate]:
        """What an atom matches in this group (run-independent, cached per group)."""
        found = cache.get(atom)
        if found is None:
            found = cache[atom] = self._compute_matches(atom, group, cache)
        return found

    def _compute_matches(
        self, atom: Atom, group: Group, cache: dict[Atom, list[Candidate]]
    ) -> list[Candidate]:
        if isinstance(atom, GpmAtom):
            return self._gpm_matches(atom.gpm, group)
        if isinstance(atom, JoinAtom):
            return self._join_matches(atom, group, cache)
        if isinstance(atom, DisjunctionAtom):
            unique: dict[tuple[object, ...], Candidate] = {}
            for operand in atom.operands:
                for cand in self.matches(operand, group, cache):
                    unique.setdefault((cand.events, tuple(sorted(cand.mapping.items()))), cand)
            return list(unique.values())
        assert isinstance(atom, ConjunctionAtom)
        joined: list[Candidate] = [Candidate((), {}, (), frozenset())]
        for operand in atom.operands:
            joined = [c for a in joined for b in self.matches(operand, group, cache) if (c := _conj(a, b))]
            if not joined:
                break
        return joined

    def _join_matches(
        self, atom: JoinAtom, group: Group, cache: dict[Atom, list[Candidate]]
    ) -> list[Candidate]:
        """The joins of a join group completed at this group; its occurrences here are
        then remembered (join groups have no residual filters)."""
        assert isinstance(cache, CandidateCache)
        rows = [
            [(c.events[0], c.mapping, c.begins[0]) for c in self.matches(op, group, cache)]
            for op in atom.operands
        ]
        fresh = fresh_occurrences(rows, group.time)
        joins = cache.state.joins
        memory = joins.get(atom.memory) or []
        horizon = None
        if atom.windowed and self.within is not None and memory:  # as runs expire (`Runtime._alive`)
            memory, stale = expire(memory, group.time - self.within)
            joins[atom.memory] = memory
            horizon = group.time - self.within if stale else None
        found = [
            self._join_candidate(atom, taken, mapping, start, group.time)
            for taken, mapping, start in new_joins(atom, memory, fresh, self._occurrences, horizon)
        ]
        remember_rows(atom, joins, fresh)
        return found

    def _join_candidate(
        self, atom: JoinAtom, taken: Seq[Occurrence], mapping: Mapping_, start: float, time: float
    ) -> Candidate:
        events = joined_events(taken, time)
        if not self._selective:
            return Candidate(events, mapping, (), frozenset(), (), (start,))
        units = tuple(self.unit(atom.operands[o[0]].gpm, o[1], o[2]) for o in taken)
        earlier = tuple(sorted(o[1] for o in taken if o[4] != time))
        return Candidate(events, mapping, (), frozenset(), units, (start,), earlier)

    def unit(self, gpm: int, event: int, mapping: Mapping[str, str]) -> Unit:
        """The input a GPM row stands for: the triple it matched, or the event. Interval patterns
        (EP-SPARQL) consume an input per triple pattern that reads it, so there it is named with
        the GPM: (gpm, event, ...) (docs/semantics.md, "Selection and consumption policies")."""
        inputs = self.automaton.inputs
        template = inputs[gpm] if gpm < len(inputs) else None
        role = (gpm,) if self._timed else ()
        if template is None:
            return (*role, event)
        return (*role, event, *(_instantiate(term, mapping) for term in template))

    def unit_event(self, unit: Unit) -> object:
        """The event an input (`unit`) belongs to."""
        return unit[1] if self._timed else unit[0]

    def _gpm_matches(self, gpm: int, group: Group) -> list[Candidate]:
        residuals = self._residuals[gpm]
        out: list[Candidate] = []
        timed, starts, time = self._timed, group.starts, group.time
        for event, mapping in group.rows.get(gpm, ()):
            pending = []
            reads: frozenset[str] | None = frozenset()
            ok = True
            for variables, predicate, is_pure in residuals:
                if variables <= mapping.keys():
                    if not predicate(mapping):
                        ok = False
                        break
                else:
                    pending.append(predicate)
                    reads = reads | variables if is_pure and reads is not None else None
            if ok:
                units: tuple[Unit, ...] = (self.unit(gpm, event, mapping),) if self._selective else ()
                begins = ((starts.get(event, time) if starts else time),) if timed else ()
                out.append(Candidate((event,), dict(mapping), tuple(pending), reads, units, begins))
        return out


def _conj(a: Candidate, b: Candidate) -> Candidate | None:
    joined = join(a.mapping, b.mapping)
    if joined is None:
        return None
    if b.begins:  # interval patterns: a join group's events end with one of this timestamp's; keep it last
        events = tuple(e for e in a.events if e not in b.events) + b.events
    else:
        events = a.events + tuple(e for e in b.events if e not in a.events)
    reads = None if a.pending_reads is None or b.pending_reads is None else a.pending_reads | b.pending_reads
    return Candidate(
        events,
        joined,
        a.pending + b.pending,
        reads,
        a.units + b.units,
        a.begins + b.begins,
        a.earlier + b.earlier,
    )


_IMPURE = frozenset({"RAND", "NOW", "UUID", "STRUUID", "BNODE"})


def pure(expr: object) -> bool:
    """Is a filter a function of the variables it reads, so that its outcome
    can be reused for equal bindings? Not with RAND(), NOW(), UUID(),
    STRUUID(), BNODE() or a graph pattern (EXISTS) anywhere inside."""
    if isinstance(expr, FunctionCall) and isinstance(expr.name, str) and expr.name.upper() in _IMPURE:
        return False
    if isinstance(expr, (Exists, Aggregate)):
        return False
    if isinstance(expr, tuple):
        return all(map(pure, expr))
    if is_dataclass(expr):
        return all(pure(getattr(expr, f.name)) for f in fields(expr))
    return True


def _operands(atom: Atom) -> tuple[Atom, ...]:
    return atom.operands if isinstance(atom, (ConjunctionAtom, DisjunctionAtom)) else ()


def _instantiate(term: str, mapping: Mapping[str, str]) -> str:
    return mapping.get(term[1:], term) if term.startswith("?") else term
