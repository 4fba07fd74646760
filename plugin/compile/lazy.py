"""Which GPMs the GPM stage may match lazily: conjunction operands (SPAseq §7.3, Appendix D).

A conjunction (Def. 8) needs every operand at one timestamp, so matching a later operand against
events at a timestamp where an earlier one found nothing is wasted work: Algorithm 10 buffers
a timestamp's events and runs the GPMs only once every edge can be satisfied. The batched GPM
stage saves the same work by matching a conjunction's operands in order, each later operand only
against the events at the timestamps where every earlier operand found rows.

That is only sound for a GPM whose every use is such a later operand: a GPM that also starts or
continues a run on its own (or in a disjunction, or as the first operand of a conjunction) needs
every event. Its earlier operands must also be matched before it, which the stage does in GPM
index order, so they must all have lower indices (`A & B` elsewhere written `B & A` leaves the
lower one eager). The GPM stage reads the result as `GpmPlan.needs`.
"""

from __future__ import annotations

from rsep.plugin.nfa.automaton import Atom, Automaton, ConjunctionAtom, DisjunctionAtom, GpmAtom, atom_gpms

Needs = tuple[tuple[Atom, ...], ...]
"""Any of these conjunctions of atoms: a timestamp is needed if, for one of them, every atom
has rows there (a GPM: its own rows; `|`: any operand's; `&`: every operand's)."""


def lazy_needs(automaton: Automaton) -> dict[int, Needs]:
    """GPM index -> the timestamps it must be matched at, for the GPMs that may be lazy."""
    uses: dict[int, list[tuple[Atom, ...]]] = {}
    for state in automaton.states:
        for atom in (state.atom, *state.guards):
            _collect(atom, (), uses)
    return {
        gpm: tuple(dict.fromkeys(contexts))
        for gpm, contexts in uses.items()
        if all(contexts) and all(_before(context, gpm) for context in contexts)
    }


def _collect(atom: Atom, context: tuple[Atom, ...], uses: dict[int, list[tuple[Atom, ...]]]) -> None:
    """Record, for every GPM in `atom`, the atoms that must have rows where it is used."""
    if isinstance(atom, GpmAtom):
        uses.setdefault(atom.gpm, []).append(context)
    elif isinstance(atom, DisjunctionAtom):
        for operand in atom.operands:
            _collect(operand, context, uses)
    elif isinstance(atom, ConjunctionAtom):
        for index, operand in enumerate(atom.operands):
            _collect(operand, context + atom.operands[:index], uses)
    else:  # any other atom (an interval join) reads every event of its GPMs
        for gpm in atom_gpms(atom):
            uses.setdefault(gpm, []).append(())


def _before(context: tuple[Atom, ...], gpm: int) -> bool:
    return all(other < gpm for atom in context for other in atom_gpms(atom))
