"""The dialects as objects (grammar/<dialect>.py's DIALECT) and detection (rsep.grammar.detection):
every example query of a dialect, here and in the shared data, is detected as that dialect and as
no other, and detection gives the same answer under every order of the registry."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rsep.grammar import DIALECTS, SparqlSyntaxError, parse_event_query
from rsep.grammar.detection import Answer, answer, detect, read
from rsep.grammar.dialect_spec import DialectSpec
from rsep.grammar.dialects import REGISTRY, event_syntax
from rsep.grammar.epsparql import EpsparqlTransformer
from rsep.plugin.algebra.events import ConsumptionPolicy, EventQuery, ReportPolicy, SelectionStrategy
from tests.support.paths import REPO
from tests.support.query_corpora import examples
from tests.support.shared_data import shared_data

SHARED = {
    "spaseq": "spaseq/*/*.q",
    "c-sparql": "citybench/csparql_query/*.txt",
    "cqels": "citybench/cqels_query/*.txt",
}
"""And in the shared data: the SPAseq reference engine's queries, CityBench's."""


def same(one: Answer, other: Answer) -> bool:
    if isinstance(one, SparqlSyntaxError) or isinstance(other, SparqlSyntaxError):
        return str(one) == str(other)
    return one == other


def detected_as(name: str, text: str, base: str) -> list[str]:
    """What is wrong with detecting `text` as dialect `name` and no other (empty: nothing)."""
    found = detect(text, REGISTRY, source="q", base_iri=base)
    owners = [dialect.name for dialect in found.owners]
    if owners != [name]:
        return [f"detected as {owners}"]
    wrong = []
    if not same(found.answer, answer(read(DIALECTS[name], text), source="q", base_iri=base)):
        wrong.append(f"detection answers {found.answer}, not what {name} alone answers")
    for other in REGISTRY:
        if other.name != name and isinstance(
            answer(read(other, text), source="q", base_iri=base), EventQuery
        ):
            wrong.append(f"{other.name} reads it as an event query too")
    return wrong


def test_every_query_file_of_the_repository_is_an_example_of_one_dialect():
    files = {path for folder in ("tests", "examples") for path in (REPO / folder).rglob("*.rq")}
    listed = [path for _, path in examples()]
    assert sorted(files - set(listed)) == []
    assert len(listed) == len(set(listed))


@pytest.mark.parametrize(
    ("name", "path"), examples(), ids=lambda x: str(x.relative_to(REPO)) if isinstance(x, Path) else x
)
def test_each_example_is_detected_as_its_dialect_and_no_other(name: str, path: Path):
    assert detected_as(name, path.read_text(encoding="utf-8"), path.as_uri()) == []


@pytest.mark.parametrize("name", sorted(SHARED))
def test_each_shared_example_is_detected_as_its_dialect_and_no_other(name: str):
    root = shared_data()
    paths = sorted(root.glob(SHARED[name]))
    assert paths, f"no {SHARED[name]} under {root}"
    wrong = {path.name: detected_as(name, path.read_text(encoding="utf-8"), path.as_uri()) for path in paths}
    assert {file: problems for file, problems in wrong.items() if problems} == {}


# --------------------------------------------------------------------------- order independence

EX = "http://example.org/"
TRICKY = [
    # a misplaced EP-SPARQL operator: CQELS takes the SEQ, EP-SPARQL's form is `SEQ {`
    f"SELECT * WHERE {{ ?a <{EX}p> ?b . SEQ {{ ?c <{EX}q> ?d }} }}",
    f"SELECT * WHERE {{ ?a <{EX}p> ?b OPTIONALSEQ {{ ?c <{EX}q> ?d }} }}",
    # C-SPARQL's stream clause, which SPAseq's FROM STREAM (with a name) does not read
    "SELECT * FROM STREAM <http://s> [RANGE 1s STEP 1s] WHERE { ?s ?p ?o",
    # CQELS's stream pattern without a window, which C-SPARQL stops at
    "SELECT * WHERE { STREAM <http://s> { ?s ?p ?o } }",
    "REGISTER QUERY q AS SELECT * WHERE { ?s ?p ?o }",
    "SELECT * WHERE { ?s ?p ?o FILTER(timestamp(?o) > 3) }",
    # ambiguous: SPAseq and C-SPARQL both write FROM STREAM; EP-SPARQL and CQELS both SEQ
    "SELECT * FROM STREAM",
    "SELECT * WHERE { { ?a ?b ?c } SEQ",
    # plain SPARQL: no dialect claims it, EP-SPARQL reads it
    f"SELECT ?a / ?b AS ?c WHERE {{ ?s <{EX}p> ?a ; <{EX}q> ?b }}",
    "SELECT * WHERE { ?s ?p ?o } LIMT 3",
    "SELECT * WHERE { ?s ?p ?o . UNION { ?a ?b ?c } }",
    "SELECT * WHERE { ?s ?p ?o } ORDER BY ?s",
    "ASK {}",
    "",
]
SEEDS = [path.read_text(encoding="utf-8") for _, path in examples()[::7]] + TRICKY
SNIPPETS = [
    "SEQ {",
    "SEQ (",
    "STREAM <http://s>",
    "[RANGE 1s]",
    "WITHIN 3 SECONDS",
    "UNION",
    "OPTIONALSEQ",
    "}",
    "{",
]


def outcome(text: str, dialects: tuple[DialectSpec, ...]) -> tuple[tuple[str, ...], str]:
    found = detect(text, dialects, source="q", base_iri="http://example.org/q.rq")
    shown = str(found.answer) if not isinstance(found.answer, EventQuery) else repr(found.answer)
    return tuple(dialect.name for dialect in found.owners), shown


def check_every_order(text: str) -> None:
    first = outcome(text, REGISTRY)
    for order in itertools.permutations(REGISTRY):
        assert outcome(text, order) == first, [d.name for d in order]
    assert event_syntax(text) == event_syntax(text, tuple(reversed(REGISTRY)))


@pytest.mark.parametrize("text", TRICKY)
def test_detection_is_the_same_under_every_order_of_the_registry(text: str):
    check_every_order(text)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SEEDS), st.floats(0, 1), st.sampled_from(["cut", "drop", *SNIPPETS]))
def test_detection_of_broken_queries_is_the_same_under_every_order(seed: str, where: float, change: str):
    """A seed query cut short, with a word dropped, or with a dialect's word inserted."""
    cut = int(len(seed) * where)
    if change == "cut":
        text = seed[:cut]
    elif change == "drop":
        rest = seed[cut:].split(maxsplit=1)
        text = seed[:cut] + (rest[1] if len(rest) > 1 else "")
    else:
        text = f"{seed[:cut]} {change} {seed[cut:]}"
    check_every_order(text)


# --------------------------------------------------------------------------- what detection says


@pytest.mark.parametrize(
    ("text", "dialect"),
    [
        ("SELECT * FROM STREAM <http://s> [RANGE 1s STEP 1s] WHERE { ?s ?p ?o", "c-sparql"),
        ("SELECT * WHERE { STREAM <http://s> { ?s ?p ?o } }", "cqels"),
        (f"SELECT * WHERE {{ ?a <{EX}p> ?b . SEQ {{ ?c <{EX}q> ?d }} }}", "ep-sparql"),
        ("SELECT * WHERE { ?s ?p ?o } ORDER BY ?s", None),
    ],
)
def test_the_dialect_whose_construct_the_text_uses_claims_it(text: str, dialect: str | None):
    assert event_syntax(text) == dialect


def test_a_text_two_dialects_read_alike_names_both_where_they_stop():
    with pytest.raises(SparqlSyntaxError) as caught:
        parse_event_query("SELECT *\nFROM STREAM", source="q")
    assert str(caught.value).startswith("q:2:12: this text reads as c-sparql and spaseq alike")
    assert "c-sparql: unexpected end of input; expected an IRI" in str(caught.value)
    assert event_syntax("SELECT *\nFROM STREAM") == "c-sparql or spaseq"


def test_plain_sparql_belongs_to_the_dialect_that_reads_plain_sparql():
    assert [d.name for d in REGISTRY if d.reads_plain_sparql] == ["ep-sparql"]
    assert parse_event_query("SELECT * WHERE { ?s ?p ?o }").dialect == DIALECTS["ep-sparql"].defaults


# --------------------------------------------------------------------------- the dialect objects


def test_the_registry_lists_each_dialect_once_by_name():
    assert (
        list(DIALECTS)
        == [dialect.name for dialect in REGISTRY]
        == ["spaseq", "ep-sparql", "c-sparql", "cqels"]
    )
    assert all(DIALECTS[d.name] is d for d in REGISTRY)


def test_each_dialect_module_defines_its_defaults():
    defaults = {name: dialect.defaults for name, dialect in DIALECTS.items()}
    assert {name: (d.report, d.interval_semantics) for name, d in defaults.items()} == {
        "spaseq": (ReportPolicy.CONTENT_CHANGE, False),
        "ep-sparql": (ReportPolicy.CONTENT_CHANGE, True),
        "c-sparql": (ReportPolicy.WINDOW_CLOSE, False),
        "cqels": (ReportPolicy.CONTENT_CHANGE, True),
    }
    assert {(d.selection, d.consumption) for d in defaults.values()} == {
        (SelectionStrategy.SKIP_TILL_ANY, ConsumptionPolicy.UNRESTRICTED)
    }


def test_event_constructs_are_derived_from_the_grammar_files():
    spaseq, epsparql, csparql, cqels = (DIALECTS[name].syntax for name in DIALECTS)
    assert {
        "within_clause",
        "partition_clause",
        "stream_clause",
        "seq_clause",
        "gpm_definition",
    } <= spaseq.rules
    assert {"WITHIN", "PARTITION", "STREAM", "SEQ", "DEFINE", "GPM"} <= spaseq.terminals
    assert "NAME" not in spaseq.terminals  # a name, declared not event syntax
    assert (epsparql.rules, epsparql.terminals) == (frozenset(), {"PATTERN_OPERATOR", "TIME_FUNCTION"})
    assert {"register_clause", "stream_clause", "time_window", "count_window"} <= csparql.rules
    assert {"REGISTER", "STREAM", "RANGE", "TIMESTAMP_FUNCTION"} <= csparql.terminals
    assert "aggregate_clause" not in csparql.rules
    assert {
        "stream_graph_pattern",
        "window_graph_pattern",
        "named_window_clause",
        "event_clause",
    } <= cqels.rules
    assert {"STREAM", "WINDOW", "SEQ"} <= cqels.terminals
    assert not {"node_test", "steps"} & cqels.rules  # nested paths, declared not event syntax
    assert "ALL" not in cqels.terminals and "UNION" in epsparql.sparql_words  # SPARQL 1.1's own


def test_a_name_declared_not_event_syntax_must_be_one_the_grammar_adds():
    dialect = DialectSpec(
        DIALECTS["ep-sparql"].defaults, "epsparql", EpsparqlTransformer, frozenset({"wehre_body"})
    )
    with pytest.raises(ValueError, match=r"epsparql\.lark adds no rule or terminal wehre_body"):
        dialect.syntax  # noqa: B018
