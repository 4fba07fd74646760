"""Interval-stamped events on the endpoint: `POST /streams` takes `prov:startedAtTime`, the log
keeps it, and a registered CQELS-CEP query reads the events as intervals (HiDeSt 2015 §4.2's
SEQ: the first element ends strictly before the second starts), as `rsep run` does."""

from __future__ import annotations

from tests.support.streaming_endpoint import caught_up, nt, number, register, service, sparql, wait_for

PREFIX = "@prefix : <http://example.org/> .\n@prefix prov: <http://www.w3.org/ns/prov#> .\n"
EVENTS = (
    PREFIX
    + """
:a  { :k :a :v }  :a  prov:startedAtTime 1 ; prov:generatedAtTime 5 .
:b1 { :k :b :v1 } :b1 prov:startedAtTime 3 ; prov:generatedAtTime 8 .
:b2 { :k :b :v2 } :b2 prov:startedAtTime 6 ; prov:generatedAtTime 9 .
"""
)
QUERY = """PREFIX : <http://example.org/>
SELECT ?x ?z FROM NAMED WINDOW :w ON <http://example.org/s> [RANGE 20s]
WHERE { WINDOW :w { SEQ({?x :a ?y}, {?x :b ?z}) } }"""
TICK = PREFIX + ":tick { } :tick prov:generatedAtTime 100 ."


def solutions(client, query_iri: str) -> list[tuple[object, object, object, dict[str, str]]]:
    """(evaluation time, the solution's own interval, bindings) of every evaluation graph."""
    rows = sparql(
        client,
        f"""SELECT ?time ?solution ?start ?end ?name ?value WHERE {{
  GRAPH <urn:rsep:matches> {{ ?g prov:wasGeneratedBy <{query_iri}> ; rsep:time ?time }}
  GRAPH ?g {{ [] rs:solution ?solution . ?solution rsep:start ?start ; rsep:end ?end ;
             rs:binding [ rs:variable ?name ; rs:value ?value ] }}
}}""",
    )
    found: dict[str, tuple[object, object, object, dict[str, str]]] = {}
    for row in rows:
        key = row["solution"]["value"]
        record = found.setdefault(key, (number(row["time"]), number(row["start"]), number(row["end"]), {}))
        record[3][row["name"]["value"]] = nt(row["value"])
    return sorted(found.values(), key=repr)


def post(client, text: str, stream: str = "http://example.org/s"):
    return client.post(f"/streams?stream={stream}", data=text, content_type="application/trig")


def test_a_cqels_cep_query_reads_posted_intervals(app):
    """:a [1, 5] SEQ :b1 [3, 8] fails (5 < 3 does not hold; as points 5 < 8 would); :a SEQ :b2
    [6, 9] holds over [1, 9], reported at 9 (the event at 100 makes that evaluation final)."""
    client = app.test_client()
    created = register(client, QUERY)
    assert created.status_code == 201, created.get_data(as_text=True)
    assert post(client, EVENTS).status_code == 202
    assert post(client, TICK, "http://example.org/other").status_code == 202
    wait_for(caught_up(app))
    logged = [(r.event.name, r.event.start and r.event.start.json()) for r in service(app).log.read()]
    assert logged[:3] == [
        ("<http://example.org/a>", 1),
        ("<http://example.org/b1>", 3),
        ("<http://example.org/b2>", 6),
    ]
    bindings = {"x": "<http://example.org/k>", "z": "<http://example.org/v2>"}
    assert solutions(client, created.json["iri"]) == [(9, 1, 9, bindings)]


def test_a_posted_interval_that_starts_after_it_ends_is_a_400_at_its_triple(app):
    client = app.test_client()
    response = post(
        client, PREFIX + ":a { :k :a :v }\n:a prov:generatedAtTime 5 ;\n  prov:startedAtTime 7 .\n"
    )
    assert response.status_code == 400
    assert "the interval of <http://example.org/a> starts at 7, after its end 5" in response.get_data(
        as_text=True
    )


EPSPARQL_SEQ = """PREFIX : <http://example.org/>
SELECT ?x ?z WHERE { ?x :a ?y } SEQ { ?x :b ?z }"""


def test_an_epsparql_match_graph_starts_where_the_match_interval_starts(app):
    """:a [1, 5] SEQ :b2 [6, 9] spans [1, 9]: `rsep:start` is 1, the start of :a's interval (its T,
    5, as a point) and the SSE/jsonl record says the same; :a SEQ :b1 [3, 8] overlaps, no match."""
    client = app.test_client()
    created = register(client, EPSPARQL_SEQ, dialect="ep-sparql")
    assert created.status_code == 201, created.get_data(as_text=True)
    assert post(client, EVENTS).status_code == 202
    wait_for(caught_up(app))
    query = created.json["iri"]
    rows = sparql(
        client,
        f"""SELECT ?start ?end ?z WHERE {{
  GRAPH <urn:rsep:matches> {{ ?g prov:wasGeneratedBy <{query}> ; rsep:start ?start ; rsep:end ?end }}
  GRAPH ?g {{ [] rs:solution [ rs:binding [ rs:variable "z" ; rs:value ?z ] ] }}
}}""",
    )
    assert [(number(r["start"]), number(r["end"]), nt(r["z"])) for r in rows] == [
        (1, 9, "<http://example.org/v2>")
    ]
    assert rows[0]["start"]["datatype"] == "http://www.w3.org/2001/XMLSchema#integer"
