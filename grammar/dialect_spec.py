"""A dialect as one object: its grammar, its transformer, its defaults and how a text shows it.

Each dialect module, grammar/<dialect>.py, ends with `DIALECT = DialectSpec(...)`, and
grammar/dialects.py lists those objects. Nothing about a dialect is written anywhere else: its
event constructs are derived from its grammar file (`EventSyntax`), and detection
(rsep.grammar.detection) asks every dialect the same questions.

A dialect's *event constructs* are the rules and terminals its grammar defines beyond
sparql11.lark (new rules, their aliases, new keywords and terminals, whether the grammar adds them
in a rule of its own or by `%override`/`%extend` of a SPARQL rule), minus the few it declares
`not_event_syntax`: the leniencies that let it read its paper's queries (EP-SPARQL's `?a / ?b AS
?c` projection, WHERE without braces), syntax that is about something other than streams, windows
or events (CQELS-CEP's nested paths, C-SPARQL's old AGGREGATE clause, read to be refused), and
bare names (SPAseq's stream and GPM names, C-SPARQL's registered names), which stand after a
keyword that is the construct. A token counts only when its text is not one of SPARQL 1.1's own
keywords or punctuation (EP-SPARQL's operator terminal also reads UNION).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from lark import Lark, Token
from lark.common import ParserConf
from lark.grammar import NonTerminal, Symbol, Terminal
from lark.lexer import PatternStr, TerminalDef
from lark.parsers.grammar_analysis import GrammarAnalyzer

from rsep.grammar.parser import SPARQL_GRAMMAR, get_parser, terminal_base
from rsep.grammar.sparql_transformer import SparqlTransformer
from rsep.plugin.algebra.events import Dialect

QUERY_START = "query_unit"
_WORD_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


@dataclass(frozen=True, slots=True)
class DialectSpec:
    """One event-query dialect: everything rsep knows about it, in grammar/<dialect>.py."""

    defaults: Dialect
    """Its name and its default selection, consumption, report policy and interval semantics: the
    algebra value every EventQuery of the dialect carries (`EventQuery.dialect`), which the
    runtime reads."""
    grammar: str
    """Its grammar, grammar/<grammar>.lark, which `%import`s sparql11.lark."""
    transformer: Callable[[str | None], SparqlTransformer]
    """Its transformer (a SparqlTransformer subclass), given the base IRI."""
    not_event_syntax: frozenset[str] = frozenset()
    """Rules and terminals its grammar adds that are not event syntax (see the module docstring);
    the dialect module says why, one comment each."""
    reads_plain_sparql: bool = False
    """Every SPARQL 1.1 query is a query of this dialect (EP-SPARQL, WWW 2011 §4.2): a text that
    no dialect claims by its event syntax is read by it."""
    misplaced_hint: Callable[[str], str | None] | None = None
    """What to tell a user who wrote one of its words where its grammar cannot take it, but in the
    form the grammar gives that word (EP-SPARQL's `SEQ {` inside a group), given the whole word;
    None, or a hint that returns None: the grammar's own error."""

    @property
    def name(self) -> str:
        return self.defaults.name

    @property
    def syntax(self) -> EventSyntax:
        """Its event constructs and how its terminals follow each other, derived from its grammar."""
        return event_syntax_of(self.grammar, self.not_event_syntax)


@dataclass(frozen=True, slots=True)
class EventSyntax:
    """What a dialect's grammar adds to SPARQL 1.1, as detection reads parse trees and tokens."""

    rules: frozenset[str]
    """Its event rules (tree node names: rules and aliases)."""
    terminals: frozenset[str]
    """Its event terminals (base names, without an import's `sparql11__` prefix)."""
    sparql_words: frozenset[str]
    """The text of SPARQL 1.1's keywords and punctuation, upper-case: a token reading one of them
    is SPARQL's, whatever terminal the dialect's lexer made of it."""
    patterns: Mapping[str, re.Pattern[str]]
    """Its event terminals by lexer name: how its lexer reads a word of its own."""
    grammar: str
    """The grammar's name, for what is derived from it only when asked (what follows a terminal)."""
    ignored: re.Pattern[str]
    """What the lexer skips between tokens (whitespace and comments)."""

    def is_event_token(self, token: Token) -> bool:
        return terminal_base(token.type) in self.terminals and token.upper() not in self.sparql_words

    def word_at(self, token: Token, text: str) -> Token | None:
        """The word `token` stands in (a lexer may stop inside one: `OPTIONAL` of `OPTIONALSEQ`),
        as a token of the dialect's event terminal that reads it whole there; None if none does."""
        start = begin = token.start_pos or 0
        while begin > 0 and text[begin - 1] in _WORD_CHARACTERS:
            begin -= 1
        end = start
        while end < len(text) and text[end] in _WORD_CHARACTERS:
            end += 1
        end = max(end, token.end_pos or start)
        found = sorted(
            name
            for name, pattern in self.patterns.items()
            if (match := pattern.match(text, begin)) is not None and match.end() == end
        )
        if not found:
            return None
        column = (token.column or 1) - (start - begin)
        return Token(found[0], text[begin:end], begin, token.line, column, end_pos=end)

    def continues(self, token: Token, text: str) -> bool:
        """Does `text` go on after `token` with something its grammar allows right after it, or end
        there (nothing contradicts the token then)?"""
        position = token.end_pos if token.end_pos is not None else len(text)
        while (skipped := self.ignored.match(text, position)) is not None and skipped.end() > position:
            position = skipped.end()
        if position >= len(text):
            return True
        return any(
            _pattern(self.grammar, name).match(text, position)
            for name in _follow(self.grammar).get(token.type, ())
        )


@functools.cache
def event_syntax_of(grammar: str, not_event_syntax: frozenset[str]) -> EventSyntax:
    parser = get_parser(grammar, QUERY_START)
    rules, terminals = _symbols(parser)
    base_rules, base_terminals = _sparql_symbols()
    new_rules = {name for name in rules - base_rules if not name.startswith(("_", "$"))}
    new_terminals = {name for name in set(terminals) - set(base_terminals) if not name.startswith("_")}
    unknown = not_event_syntax - new_rules - new_terminals
    if unknown:
        raise ValueError(f"{grammar}.lark adds no rule or terminal {', '.join(sorted(unknown))}")
    return EventSyntax(
        rules=frozenset(new_rules - not_event_syntax),
        terminals=frozenset(new_terminals - not_event_syntax),
        sparql_words=frozenset(
            definition.pattern.value.upper()
            for definition in base_terminals.values()
            if isinstance(definition.pattern, PatternStr)
        ),
        patterns={
            definition.name: re.compile(_regexp(definition))
            for definition in parser.terminals
            if _base(definition.name) in new_terminals - not_event_syntax
        },
        grammar=grammar,
        ignored=_ignored(parser),
    )


def _symbols(parser: Lark) -> tuple[set[str], dict[str, TerminalDef]]:
    """Rule and alias names, and terminals, of a parser's grammar, without an import's namespace
    (lark's own names, `__anon_star_0`, `__ANON_1`, keep their leading underscores)."""
    rules = {_base(rule.origin.name) for rule in parser.rules}
    rules |= {rule.alias for rule in parser.rules if rule.alias}
    return rules, {_base(definition.name): definition for definition in parser.terminals}


def _base(name: str) -> str:
    return name if name.startswith("_") else terminal_base(name)


@functools.cache
def _sparql_symbols() -> tuple[set[str], dict[str, TerminalDef]]:
    """SPARQL 1.1's rules and terminals, queries and updates (`ALL` is SPARQL's, from CLEAR ALL)."""
    return _symbols(get_parser(SPARQL_GRAMMAR, (QUERY_START, "update_unit")))


@functools.cache
def _follow(grammar: str) -> dict[str, frozenset[str]]:
    """For each terminal of the grammar, the terminals that may follow it in a rule: FIRST of the
    rest of the rule, and FOLLOW of the rule when that rest may be empty (lark's own analysis)."""
    parser = get_parser(grammar, QUERY_START)
    analysis = GrammarAnalyzer(ParserConf(parser.rules, {}, [QUERY_START]))
    after: dict[str, set[str]] = {}
    for rule in parser.rules:
        for index, symbol in enumerate(rule.expansion):
            if isinstance(symbol, Terminal):
                after.setdefault(symbol.name, set()).update(
                    _first(rule.expansion[index + 1 :], rule.origin, analysis)
                )
    return {name: frozenset(names) for name, names in after.items()}


@functools.cache
def _pattern(grammar: str, terminal: str) -> re.Pattern[str]:
    if terminal == "$END":
        return re.compile(r"\Z")
    return re.compile(_regexp(get_parser(grammar, QUERY_START).get_terminal(terminal)))


def _first(rest: Sequence[Symbol], origin: NonTerminal, analysis: GrammarAnalyzer) -> set[str]:
    found: set[str] = set()
    for symbol in rest:
        found |= {terminal.name for terminal in analysis.FIRST[symbol]}
        if symbol not in analysis.NULLABLE:
            return found
    return found | {terminal.name for terminal in analysis.FOLLOW[origin]}


def _regexp(definition: TerminalDef) -> str:
    return definition.pattern.to_regexp()


def _ignored(parser: Lark) -> re.Pattern[str]:
    return re.compile(
        "|".join(f"(?:{_regexp(parser.get_terminal(name))})" for name in parser.lexer_conf.ignore)
    )
