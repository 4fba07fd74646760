"""The rewrite's plans: where the schema part of each triple pattern is evaluated (a lookup per
knowledge-base version, or property paths per batch), what stays as stored, and that the rest of
the plan (variables, partition key, filters) is what the query says."""

from __future__ import annotations

from dataclasses import replace

import pyoxigraph as ox
import pytest

from rsep.grammar import parse_event_query
from rsep.plugin.algebra.analysis import expr_vars
from rsep.plugin.compile.entailment import SCHEMA_GRAPH, is_hidden
from rsep.plugin.compile.gpm_plan import GpmPlan
from rsep.plugin.compile.nfa_compiler import CompileError
from rsep.plugin.compile.query_plan import compile_query
from rsep.plugin.store.kb import KnowledgeBase
from rsep.plugin.windows import plan_windows
from rsep.plugin.windows.window_plan import MERGED_GRAPH

ORG = "http://example.org/org#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"


def gpms(*bodies: str, seq: str | None = None, entailment: str | None = "rdfs") -> tuple[GpmPlan, ...]:
    names = [chr(ord("A") + i) for i in range(len(bodies))]
    defines = " ".join(f"DEFINE GPM {n} ON S1 {{ {b} }}" for n, b in zip(names, bodies, strict=True))
    text = (
        f"PREFIX : <{ORG}> SELECT * FROM STREAM S1 <urn:s> "
        f"WHERE {{ SEQ ({seq or '; '.join(names)}) {defines} }}"
    )
    return compile_query(replace(parse_event_query(text), entailment=entailment)).gpms


def test_an_unknown_regime_is_a_compile_error():
    with pytest.raises(CompileError, match="unknown entailment regime 'owl'"):
        gpms("?x a :Person", entailment="owl")


def test_a_triple_pattern_joins_one_lookup_evaluated_per_knowledge_base_version():
    (plan,) = gpms("?x a :Person ; :worksFor ?org")
    assert len(plan.lookups) == 2
    assert all(len(lookup.keys) == 2 and all(map(is_hidden, lookup.keys)) for lookup in plan.lookups)
    assert plan.kb_graphs_in_batch == ()  # the schema never goes into the batch store
    assert plan.event_query.startswith("SELECT DISTINCT")
    assert (plan.variables, plan.certain) == ({"x", "org"}, {"x", "org"})
    assert plan.hidden and all(map(is_hidden, plan.hidden))


def test_property_paths_and_background_blocks_are_matched_as_stored():
    (plan,) = gpms("?x :p/:q ?y . GRAPH <urn:kb> { ?y a :Person }")
    assert plan.lookups == () and plan.hidden == ()
    assert "rdf-schema" not in plan.event_query and "rdf-schema" not in (plan.kb_query or "")


def test_inside_optional_the_schema_is_read_in_place_per_batch():
    (plan,) = gpms("?x :worksFor ?org OPTIONAL { ?org a :Company }")
    assert plan.kb_graphs_in_batch == (SCHEMA_GRAPH,)
    assert len(plan.lookups) == 1  # the mandatory pattern still joins a lookup
    assert f"GRAPH <{SCHEMA_GRAPH}>" in plan.event_query


def test_a_variable_a_lookup_binds_is_filtered_after_the_lookup():
    (plan,) = gpms(f"?x a ?c . FILTER (?c != <{ORG}Person>)")
    assert [sorted(r.variables) for r in plan.residuals] == [["c"]]
    assert "!=" not in plan.event_query


def test_a_variable_an_optional_observes_is_bound_in_place_not_by_a_lookup():
    (plan,) = gpms("?x a ?c OPTIONAL { ?c :label ?l }")
    assert plan.lookups == ()
    assert plan.kb_graphs_in_batch == (SCHEMA_GRAPH,)


def test_filter_not_exists_is_evaluated_with_its_pattern_under_entailment():
    (plan,) = gpms("?x a :Person FILTER NOT EXISTS { ?x a :Manager }")
    assert plan.residuals == ()
    assert "NOT EXISTS" in plan.event_query


def test_a_gpm_used_twice_is_rewritten_once():
    plans = gpms("?x a :Person", seq="A; A")
    assert len(plans) == 1


def test_the_partition_key_is_the_query_s_own():
    bodies = ("?x a :Manager", "?x :worksFor ?org", "?x a :Person")
    plain = compile_query(parse_event_query(_three(bodies)))
    entailed = compile_query(replace(parse_event_query(_three(bodies)), entailment="rdfs"))
    assert entailed.key == plain.key == ("x",)
    assert entailed.output_vars == plain.output_vars == ("org", "x")


def _three(bodies: tuple[str, ...]) -> str:
    defines = " ".join(f"DEFINE GPM {n} ON S1 {{ {b} }}" for n, b in zip("ABC", bodies, strict=True))
    return f"PREFIX : <{ORG}> SELECT * FROM STREAM S1 <urn:s> WHERE {{ SEQ (A; B; C) {defines} }}"


def test_window_blocks_read_the_window_and_its_graph_of_entailed_triples_without_the_schema():
    text = (
        f"REGISTER QUERY q AS PREFIX : <{ORG}> SELECT (COUNT(?x) AS ?n) "
        "FROM STREAM <urn:s> [RANGE 10s STEP 10s] WHERE { ?x a :Person ; :worksFor [] }"
    )
    query = parse_event_query(text)
    plain, entailed = plan_windows(query), plan_windows(replace(query, entailment="rdfs"))
    hidden = f"GRAPH <{MERGED_GRAPH}-entailed>"
    assert entailed.sparql.count(hidden) == 2 and hidden not in plain.sparql  # one per triple pattern
    assert "rdf-schema" not in entailed.sparql  # the schema is in the hidden graph's triples
    # the blank node is projected away, each of its witnesses kept: BGP matching's multiplicities
    assert "SELECT ?x\n" in entailed.sparql and "DISTINCT" not in entailed.sparql


def test_the_schema_is_the_default_graph_s_rdfs_triples():
    kb = KnowledgeBase()
    kb.load_data(
        f"<{ORG}A> <{RDFS}subClassOf> <{ORG}B> .\n"
        f"<{ORG}p> <{RDFS}domain> <{ORG}A> .\n"
        f'<{ORG}p> <{RDFS}label> "p" .\n'
        f"<{ORG}C> <{RDFS}subClassOf> <{ORG}B> <urn:elsewhere> .\n",
        ox.RdfFormat.N_QUADS,
    )
    schema = {
        (str(q.subject), str(q.predicate), str(q.object), str(q.graph_name))
        for q in kb.graph_quads(SCHEMA_GRAPH)
    }
    assert schema == {
        (f"<{ORG}A>", f"<{RDFS}subClassOf>", f"<{ORG}B>", f"<{SCHEMA_GRAPH}>"),
        (f"<{ORG}p>", f"<{RDFS}domain>", f"<{ORG}A>", f"<{SCHEMA_GRAPH}>"),
    }


def test_lookups_are_evaluated_again_only_when_the_default_graph_may_have_changed():
    kb = KnowledgeBase()
    query = f"SELECT ?c WHERE {{ ?c <{RDFS}subClassOf>+ <{ORG}Person> }}"
    first = kb.lookup(query)
    with kb.writing(default_graph=False) as store:  # e.g. match graphs written
        store.add(
            ox.Quad(
                ox.NamedNode("urn:a"), ox.NamedNode("urn:b"), ox.NamedNode("urn:c"), ox.NamedNode("urn:g")
            )
        )
    assert kb.lookup(query) is first
    kb.update(f"INSERT DATA {{ <{ORG}Employee> <{RDFS}subClassOf> <{ORG}Person> }}")
    assert kb.lookup(query) == [{"c": f"<{ORG}Employee>"}]


def test_hidden_variables_never_reach_the_filters_the_nfa_evaluates():
    (plan,) = gpms("?x a ?c ; :worksFor ?o . FILTER (?c != ?o)")
    assert all(not any(map(is_hidden, expr_vars(r.expr))) for r in plan.residuals)
