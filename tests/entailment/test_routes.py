"""EP-SPARQL §6 Test 3's shape (tests/fixtures/entailment/routes): a delivery agent's route is
recomputed when its next connection is blocked, as a transitive closure (`m:link*`) over the
connections that remain open in the background road graph. The traffic authority closes each
blocked connection there (a SPARQL Update) before it posts the report, so the route avoids every
connection blocked so far, around cycles too. The closure is a background part of the GPM,
evaluated once per knowledge-base version, and follows the road graph current when the report is
processed: in-process one event per batch (both entailment mechanisms) and on the endpoint."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from rsep.endpoint.run_command import load_kb, read_streams
from rsep.plugin.compile.entailment import Mechanism
from rsep.plugin.compile.query_plan import QueryPlan, compile_query
from rsep.plugin.numbering import number_events
from rsep.plugin.replay import Replay
from rsep.plugin.results import Projector, jsonl_line
from rsep.plugin.store.event_reader import read_event_file
from rsep.plugin.store.gpm_stage import GpmEvaluator
from rsep.plugin.store.kb import KnowledgeBase
from tests.entailment.support import case_query, compiled, expected, folder, manifest, request
from tests.support.streaming_endpoint import caught_up, nquads_of, wait_for

M = "http://example.org/milan#"
CASE = "routes"
BINDINGS = ("agent", "from", "blocked", "via", "dest")


class CountingKb(KnowledgeBase):
    """Counts how often the road graph's closure is evaluated."""

    def __init__(self, kb: KnowledgeBase) -> None:
        super().__init__(kb.store)
        self.version = kb.version
        self.closures = 0

    def select(self, query: str) -> list[dict[str, str]]:
        self.closures += f"{M}link>*" in query
        return super().select(query)


def updates(case: str = CASE) -> dict[str, str]:
    """The SPARQL Update run before each traffic report, by the report's local name."""
    files: dict[str, str] = manifest(case)["updates"]
    return {name: (folder(case) / file).read_text(encoding="utf-8") for name, file in files.items()}


def replay_one_by_one(kb: KnowledgeBase, plan: QueryPlan, before: dict[str, str]) -> list[dict[str, object]]:
    """Each event in its own batch, as the endpoint processes events as they arrive; the update
    `before[name]` runs on the knowledge base just before the event <m:name>, as a SPARQL Update
    on /sparql does."""
    events = number_events(read_streams(plan, request(CASE, "rdfs").streams))
    replay = Replay(plan, GpmEvaluator(plan.gpms, kb), batch_size=1)
    matches = []
    for numbered in events:
        update = before.get(numbered.event.name[len(M) + 1 : -1])
        if update is not None:
            kb.update(update)
        matches.extend(replay.process_batch([numbered]))
    solutions = Projector.for_plan(plan).solutions(matches, [n.event for n in events])
    return [json.loads(jsonl_line(s)) for s in solutions]


def lines(entailment: str | None = "rdfs") -> list[dict[str, object]]:
    return [json.loads(line) for line in expected(CASE, entailment).splitlines()]


def ordered(found: list[dict[str, object]]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True) for r in found)


def routes(found: list[dict[str, object]]) -> list[tuple[str, ...]]:
    return [tuple(str(r["bindings"][n]).split("#")[1][:-1] for n in ("agent", "via")) for r in found]  # type: ignore[index]


@pytest.mark.parametrize("mechanism", list(Mechanism), ids=lambda m: m.value)
def test_a_blocked_connection_reroutes_over_the_connections_still_open(mechanism):
    found = replay_one_by_one(load_kb(request(CASE, "rdfs").kb), compiled(CASE, mechanism), updates())
    assert ordered(found) == ordered(lines())  # two routes of one match: in either order
    # van7 at 10:05; van3 at 10:08, Duomo -> Cordusio closed before; van9 none: Lanza only
    # through the blocked connection, cycle or not
    assert sorted(routes(found)) == [("van3", "SanBabila"), ("van7", "Missori"), ("van7", "SanBabila")]


def test_without_entailment_no_agent_is_typed_and_nothing_matches():
    plan = compile_query(case_query(CASE))
    assert replay_one_by_one(load_kb(request(CASE, None).kb), plan, updates()) == lines(None) == []


def test_with_every_connection_open_the_routes_would_use_blocked_ones():
    """What the closure over the initial road graph finds: the reason the connections are closed in
    the knowledge base rather than only named in the event (van9 round the cycle through Cordusio
    -> Lanza itself; van3 through Cordusio, blocked at 10:05)."""
    plan = compile_query(replace(case_query(CASE), entailment="rdfs"))
    found = routes(replay_one_by_one(load_kb(request(CASE, "rdfs").kb), plan, {}))
    assert ("van9", "Cairoli") in found and ("van3", "Cordusio") in found


def test_the_closure_over_the_road_graph_is_evaluated_once_per_knowledge_base_version():
    kb = CountingKb(load_kb(request(CASE, "rdfs").kb))
    plan = compile_query(replace(case_query(CASE), entailment="rdfs"))
    assert replay_one_by_one(kb, plan, updates()) == lines()
    assert kb.closures == 4  # 5 reports, 4 updates (t5 reports a connection closed already)


def test_the_endpoint_reroutes_over_the_road_graph_its_sparql_updates_keep(app):
    client = app.test_client()
    kb = app.extensions["rsep"].kb
    kb.load(folder(CASE) / "roads.trig")
    text = (folder(CASE) / "query.rq").read_text(encoding="utf-8")
    response = client.post("/queries?entailment=rdfs", data=text, content_type="application/sparql-query")
    assert response.status_code == 201, response.get_data(as_text=True)
    before = updates()
    for iri, file in sorted(manifest(CASE)["streams"].items()):  # deliveries, then traffic
        for event in read_event_file(folder(CASE) / file, iri, scope=iri):
            update = before.get(event.name[len(M) + 1 : -1])
            if update is not None:
                posted = client.post("/sparql", data=update, content_type="application/sparql-update")
                assert posted.status_code in (200, 204), posted.get_data(as_text=True)
            posted = client.post(
                f"/streams?stream={iri}", data=nquads_of(event), content_type="application/n-quads"
            )
            assert posted.status_code == 202, posted.get_data(as_text=True)
            wait_for(caught_up(app), timeout=120)
    assert read_back(client, response.json["iri"]) == sorted(
        tuple(str(r["bindings"][n]) for n in BINDINGS)  # type: ignore[index]
        for r in lines()
    )


def read_back(client, query_iri: str) -> list[tuple[str, ...]]:
    """The solutions the endpoint wrote for the query, as N-Triples terms in BINDINGS order."""
    names = " ".join(f"?{n}" for n in BINDINGS)
    bound = " ".join(f'rs:binding [ rs:variable "{n}" ; rs:value ?{n} ] ;' for n in BINDINGS)
    response = client.post(
        "/sparql",
        data=f"""PREFIX rs: <http://www.w3.org/2001/sw/DataAccess/tests/result-set#>
PREFIX prov: <http://www.w3.org/ns/prov#>
SELECT {names} WHERE {{
  GRAPH <urn:rsep:matches> {{ ?g prov:wasGeneratedBy <{query_iri}> }}
  GRAPH ?g {{ [] rs:solution [ {bound} ] }} }}""",
        content_type="application/sparql-query",
        headers={"Accept": "application/sparql-results+json"},
    )
    assert response.status_code == 200, response.get_data(as_text=True)
    rows = response.json["results"]["bindings"]
    return sorted(tuple(f"<{row[n]['value']}>" for n in BINDINGS) for row in rows)
