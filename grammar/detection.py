"""Which dialect a text is written in: the same answer whatever order the dialects are listed in.

Every dialect reads the text (`read`): its grammar reads it whole, or stops at a token. A dialect
*claims* the text when what its grammar read holds one of its event constructs (derived from its
grammar, rsep.grammar.dialect_spec), and how strongly (`Claim`) depends on how it read it:

- **in place**: a rule of its own that its parser completed, or a token of its own that the
  parser took and read on past. The token it took last, right before it stopped, is not read past:
  CQELS takes the `SEQ` of `?a :p ?b . SEQ { ... }` and stops at the `{` after it, which is not
  its `SEQ (...)`;
- **in form**: it stopped at (or right after) a word of its own that the text writes in the form
  its grammar gives that word: followed by something its grammar allows right after it in some
  rule, or by the end of the text. EP-SPARQL stops at that `SEQ`, followed by a group as its
  operators are; SPAseq's `STREAM` is followed by a name, C-SPARQL's by an IRI, CQELS's `SEQ` by
  `(`;
- **by word**: it stopped at or right after a word of its own, written otherwise.

Words are tokens with a letter (a dialect's own punctuation, SPAseq's `:`, shows it only inside
its constructs), and a word whose text is SPARQL 1.1's (`UNION`) is SPARQL's. The text's owner is
then chosen from the readings alone, never from their order:

1. the dialects with the strongest claim; when none claims, the text is plain SPARQL as far as any
   dialect reads it, and it belongs to the dialects that read plain SPARQL
   (`DialectSpec.reads_plain_sparql`: every SPARQL 1.1 query is an EP-SPARQL query);
2. of several, one that accepts the text over those that refuse it; of refusals, the one that read
   furthest: a grammar that read the whole text (its transformer refused it, where it says) over one
   that stopped, then the later position;
3. still several, saying different things: the text is ambiguous, and the error names them all.

The owner's answer is its query, or its error: a grammar that stopped at a word of its own written
in its form gives the dialect's hint for a misplaced word (`DialectSpec.misplaced_hint`), named
whole where it starts (EP-SPARQL's parser stops after `OPTIONAL` of a misplaced `OPTIONALSEQ`,
SPARQL's keyword).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum

from lark import Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from rsep.grammar.collector import collector_paused
from rsep.grammar.dialect_spec import QUERY_START, DialectSpec, EventSyntax
from rsep.grammar.parser import (
    SparqlSyntaxError,
    check_bounds,
    get_parser,
    syntax_error,
    terminal_base,
    transform_tree,
)
from rsep.plugin.algebra.events import EventQuery

Answer = EventQuery | SparqlSyntaxError | None
"""A dialect's answer to a text: its query, its error, or None (its transformer read plain SPARQL)."""


class Claim(IntEnum):
    """How strongly what a dialect's grammar read shows the dialect (the module docstring)."""

    WORD = 1
    IN_FORM = 2
    IN_PLACE = 3


@dataclass(frozen=True, slots=True)
class Reading:
    """What one dialect's grammar made of a text."""

    dialect: DialectSpec
    text: str
    tree: Tree[Token] | None
    """The parse tree, when the grammar read the whole text."""
    error: UnexpectedInput | None
    """Where it stopped, when it did not."""
    claim: Claim | None
    misplaced: Token | None
    """The word it stopped at, when that is a word of the dialect's own written in its form."""

    @property
    def reach(self) -> int:
        """How far the grammar read: the offset it stopped at, past the end if it read it all."""
        error = self.error
        if error is None:
            return len(self.text) + 1
        if isinstance(error, UnexpectedToken) and error.token.type != "$END":
            return error.token.start_pos or 0
        if isinstance(error, UnexpectedCharacters):
            return error.pos_in_stream or 0
        return len(self.text)


def read(dialect: DialectSpec, text: str) -> Reading:
    """The dialect's grammar over the text, and the claim what it read makes."""
    syntax = dialect.syntax
    try:
        tree = get_parser(dialect.grammar, QUERY_START).parse(text)
    except UnexpectedInput as error:
        return _stopped(dialect, text, error, syntax)
    claim = Claim.IN_PLACE if _holds_event_construct([tree], syntax) else None
    return Reading(dialect, text, tree, None, claim, None)


def _stopped(dialect: DialectSpec, text: str, error: UnexpectedInput, syntax: EventSyntax) -> Reading:
    interactive = getattr(error, "interactive_parser", None)
    taken: list[Tree[Token] | Token] = list(interactive.parser_state.value_stack) if interactive else []
    last = taken[-1] if taken and isinstance(taken[-1], Token) else None
    if last is not None:
        taken.pop()  # taken last: the parser stopped right after it
    stop = error.token if isinstance(error, UnexpectedToken) and error.token.type != "$END" else None
    word = syntax.word_at(stop, text) if stop is not None else None
    misplaced = word if word is not None and _is_word(word) and syntax.continues(word, text) else None
    words = [w for w in (last, word) if w is not None and _is_word(w) and syntax.is_event_token(w)]
    claim = None
    if _holds_event_construct(taken, syntax):
        claim = Claim.IN_PLACE
    elif any(syntax.continues(w, text) for w in words):
        claim = Claim.IN_FORM
    elif words:
        claim = Claim.WORD
    return Reading(dialect, text, None, error, claim, misplaced)


def _is_word(token: Token) -> bool:
    """Punctuation of a dialect's own (SPAseq's `:` and `&`) shows it only inside its constructs."""
    return any(character.isalpha() for character in token)


def _holds_event_construct(items: Iterable[Tree[Token] | Token], syntax: EventSyntax) -> bool:
    stack = list(items)  # not Tree.iter_subtrees, which lists the whole tree first
    while stack:
        item = stack.pop()
        if isinstance(item, Token):
            if syntax.is_event_token(item):
                return True
        elif terminal_base(item.data) in syntax.rules:
            return True
        else:
            stack.extend(item.children)
    return False


def answer(reading: Reading, *, source: str, base_iri: str | None) -> Answer:
    """The dialect's answer to the text it read."""
    dialect = reading.dialect
    if reading.tree is None:
        assert reading.error is not None
        parser = get_parser(dialect.grammar, QUERY_START)
        found = syntax_error(reading.error, reading.text, parser, source)
        return _hinted(reading, found) or found
    try:
        result = transform_tree(reading.tree, lambda: dialect.transformer(base_iri), source=source)
    except SparqlSyntaxError as error:
        return error
    return result if isinstance(result, EventQuery) else None


def _hinted(reading: Reading, found: SparqlSyntaxError) -> SparqlSyntaxError | None:
    """The dialect's hint for a misplaced word, where the word starts."""
    word, hint = reading.misplaced, reading.dialect.misplaced_hint
    message = hint(str(word)) if word is not None and hint is not None else None
    if word is None or message is None:
        return None
    return SparqlSyntaxError(message, source=found.source, line=word.line or 1, column=word.column or 1)


@dataclass(frozen=True, slots=True)
class Detection:
    """Whose text it is, and the owner's answer."""

    claimed: bool
    """Some dialect claims the text by its event syntax (else it is plain SPARQL to all of them)."""
    owners: tuple[DialectSpec, ...]
    """The owner; several when the text is ambiguous; none when no dialect reads plain SPARQL."""
    answer: Answer


def detect(
    text: str, dialects: Iterable[DialectSpec], *, source: str = "<query>", base_iri: str | None = None
) -> Detection:
    """Read `text` with every dialect and choose its owner (the module docstring)."""
    check_bounds(text, source=source)
    with collector_paused(len(text)):
        return _detect(text, dialects, source=source, base_iri=base_iri)


def _detect(text: str, dialects: Iterable[DialectSpec], *, source: str, base_iri: str | None) -> Detection:
    """`detect` once its bounds are checked, with the collector paused for a large text."""
    readings = [read(dialect, text) for dialect in dialects]
    strongest = max((r.claim for r in readings if r.claim is not None), default=None)
    if strongest is None:
        candidates = [r for r in readings if r.dialect.reads_plain_sparql]
    else:
        candidates = [r for r in readings if r.claim is strongest]
    answers = {r.dialect.name: answer(r, source=source, base_iri=base_iri) for r in candidates}
    ranks = {r.dialect.name: _rank(r, answers[r.dialect.name]) for r in candidates}
    best = max(ranks.values(), default=None)
    owners = sorted((r for r in candidates if ranks[r.dialect.name] == best), key=lambda r: r.dialect.name)
    chosen = [answers[r.dialect.name] for r in owners]
    if len(owners) > 1 and len({_answer_key(a) for a in chosen}) == 1:
        owners = owners[:1]  # tied, but they say the same thing
    found = chosen[0] if len(owners) == 1 else _ambiguous(owners, chosen, source) if owners else None
    return Detection(strongest is not None, tuple(r.dialect for r in owners), found)


def _rank(reading: Reading, found: Answer) -> tuple[int, int, int, int]:
    if isinstance(found, EventQuery):
        return (2, 0, 0, 0)
    if found is None:
        return (0, -1, 0, 0)
    return (1 if reading.tree is not None else 0, reading.reach, found.line, found.column)


def _answer_key(found: Answer) -> object:
    return str(found) if isinstance(found, SparqlSyntaxError) else found


def _ambiguous(owners: Sequence[Reading], answers: Sequence[Answer], source: str) -> SparqlSyntaxError:
    names = " and ".join(r.dialect.name for r in owners)
    errors = [
        (r.dialect.name, a) for r, a in zip(owners, answers, strict=True) if isinstance(a, SparqlSyntaxError)
    ]
    if not errors:
        message = f"this text is a query of {names} alike: name its dialect (POST /queries?dialect=...)"
        return SparqlSyntaxError(message, source=source, line=1, column=1)
    line, column = min((error.line, error.column) for _, error in errors)
    each = "; ".join(
        f"{name}: {error.message}"
        if (error.line, error.column) == (line, column)
        else f"{name}: {error.line}:{error.column}: {error.message}"
        for name, error in errors
    )
    message = f"this text reads as {names} alike, and none of them takes it ({each})"
    return SparqlSyntaxError(message, source=source, line=line, column=column)
