"""The SPARQL 1.1 Protocol at /sparql, one behaviour per test: how requests are read and checked
(in Fuseki's order: method, content type, parameters, parse), what the answers look like, content
negotiation, the protocol dataset, updates, event queries and the bearer token."""

from __future__ import annotations

import json
from pathlib import Path

import pyoxigraph as ox
import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.datastructures import MultiDict

from rsep.endpoint.app import create_app
from rsep.endpoint.negotiation import MediaRange, parse_accept
from rsep.endpoint.resources import resources
from rsep.endpoint.sparql_protocol import with_using_clauses
from rsep.plugin.store.sparql_service import GRAPH_MEDIA_TYPES, RESULT_MEDIA_TYPES, Dataset
from tests.support.paths import REPO

EX = "http://example.org/"
SELECT_ALL = "SELECT ?s ?p ?o WHERE { ?s ?p ?o }"
SMART_GRID_QUERY = REPO / "examples" / "smart-grid" / "query.rq"


def insert(client: FlaskClient, data: str) -> None:
    response = client.post(
        "/sparql", data=f"INSERT DATA {{ {data} }}", content_type="application/sparql-update"
    )
    assert response.status_code == 204, response.get_data(as_text=True)


def ask(client: FlaskClient, query: str, **params: str) -> bool:
    response = client.get("/sparql", query_string={"query": query, **params})
    assert response.status_code == 200, response.get_data(as_text=True)
    return bool(json.loads(response.data)["boolean"])


def results(response: object) -> ox.QuerySolutions | ox.QueryBoolean:
    media_type = response.mimetype  # type: ignore[attr-defined]
    return ox.parse_query_results(response.data, ox.QueryResultsFormat.from_media_type(media_type))  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- reading requests


def test_get_select_answers_sparql_json_by_default(client: FlaskClient) -> None:
    insert(client, f"<{EX}s> <{EX}p> 1")
    response = client.get("/sparql", query_string={"query": SELECT_ALL})
    assert response.status_code == 200
    assert response.mimetype == "application/sparql-results+json"
    assert json.loads(response.data)["results"]["bindings"][0]["s"]["value"] == f"{EX}s"


def test_post_form_and_direct_body_are_the_same_query(client: FlaskClient) -> None:
    insert(client, f"<{EX}s> <{EX}p> 1")
    form = client.post("/sparql", data={"query": SELECT_ALL})
    direct = client.post("/sparql", data=SELECT_ALL, content_type="application/sparql-query")
    assert form.status_code == direct.status_code == 200
    assert form.data == direct.data


def test_trailing_slash_is_the_same_endpoint(client: FlaskClient) -> None:
    assert client.get("/sparql/", query_string={"query": "ASK {}"}).status_code == 200


def test_head_answers_like_get_without_a_body(client: FlaskClient) -> None:
    response = client.head("/sparql", query_string={"query": "ASK {}"})
    assert response.status_code == 200
    assert response.mimetype == "application/sparql-results+json"
    assert response.data == b""


def test_unsupported_method_is_405_with_allow(client: FlaskClient) -> None:
    response = client.put("/sparql", query_string={"query": "ASK {}"})
    assert response.status_code == 405
    assert {"GET", "POST"} <= {m.strip() for m in response.headers["Allow"].split(",")}
    assert response.mimetype == "text/plain"


def test_unsupported_content_type_is_415(client: FlaskClient) -> None:
    response = client.post("/sparql", data="ASK {}", content_type="text/plain")
    assert response.status_code == 415
    assert "application/sparql-query" in response.get_data(as_text=True)


def test_missing_content_type_is_415(client: FlaskClient) -> None:
    assert client.post("/sparql", data=b"query=ASK%20%7B%7D").status_code == 415


def test_charset_other_than_utf8_is_415(client: FlaskClient) -> None:
    body = "ASK {}".encode("utf-16")
    response = client.post("/sparql", data=body, content_type="application/sparql-query; charset=UTF-16")
    assert response.status_code == 415
    assert "UTF-16" in response.get_data(as_text=True)


def test_utf8_charset_is_accepted(client: FlaskClient) -> None:
    response = client.post("/sparql", data="ASK {}", content_type="application/sparql-query; charset=utf-8")
    assert response.status_code == 200


def test_body_that_is_not_utf8_is_400(client: FlaskClient) -> None:
    response = client.post("/sparql", data=b"ASK { \xff }", content_type="application/sparql-query")
    assert response.status_code == 400
    assert response.get_data(as_text=True).startswith("body: not UTF-8")


@pytest.mark.parametrize(
    ("method", "encoded", "parameter", "byte"),
    [
        ("POST", "query=SELECT%20(%22%FF%22%20AS%20%3Fx)%20%7B%7D", "query", 9),
        ("GET", "query=SELECT%20(%22%FF%22%20AS%20%3Fx)%20%7B%7D", "query", 9),
        (
            "POST",
            "update=INSERT%20DATA%20%7B%20%3Curn%3Aa%3E%20%3Curn%3Ab%3E%20%22%FF%22%20%7D",
            "update",
            31,
        ),
        ("POST", "query=ASK%7B%7D&default-graph-uri=http%3A%2F%2Fex.org%2F%E9", "default-graph-uri", 14),
    ],
)
def test_a_form_or_url_parameter_that_is_not_utf8_is_400_naming_it(
    client: FlaskClient, method: str, encoded: str, parameter: str, byte: int
) -> None:
    """As for a body: werkzeug would read the bytes as U+FFFD, text the client never sent."""
    if method == "GET":
        response = client.get(f"/sparql?{encoded}")
    else:
        response = client.post("/sparql", data=encoded, content_type="application/x-www-form-urlencoded")
    assert response.status_code == 400
    assert response.get_data(as_text=True) == f"{parameter}: not UTF-8 (its value, byte {byte})\n"
    assert not ask(client, "ASK { ?s ?p ?o }")  # the update stored nothing


def test_a_direct_body_with_a_query_parameter_names_the_parameter(client: FlaskClient) -> None:
    response = client.post(
        "/sparql?update=CLEAR%20ALL", data="ASK {}", content_type="application/sparql-query"
    )
    assert (
        response.get_data(as_text=True)
        == "update: the request body is the query; do not also send the parameter update\n"
    )


def test_content_type_is_checked_before_parameters(client: FlaskClient) -> None:
    response = client.post("/sparql?query=a&query=b", data="x", content_type="text/plain")
    assert response.status_code == 415


def test_parameters_are_checked_before_parsing(client: FlaskClient) -> None:
    response = client.get("/sparql?query=ASK%20%7B&query=ASK%20%7B")
    assert response.status_code == 400
    assert response.get_data(as_text=True) == "query: given 2 times; send one query per request\n"


def test_missing_query_is_400_naming_query(client: FlaskClient) -> None:
    """(GET /sparql with no parameter at all is the service description.)"""
    response = client.get("/sparql?default-graph-uri=http://example.org/g")
    assert response.status_code == 400
    assert response.get_data(as_text=True).startswith("query: missing")


def test_query_and_update_together_is_400_naming_update(client: FlaskClient) -> None:
    response = client.post("/sparql", data={"query": "ASK {}", "update": "CLEAR ALL"})
    assert response.status_code == 400
    assert response.get_data(as_text=True).startswith("update: ")


def test_update_with_get_is_400(client: FlaskClient) -> None:
    response = client.get("/sparql", query_string={"update": "CLEAR ALL"})
    assert response.status_code == 400
    assert response.get_data(as_text=True) == "update: updates must be sent with POST\n"


def test_direct_query_body_with_a_query_parameter_is_400(client: FlaskClient) -> None:
    response = client.post("/sparql?query=ASK%7B%7D", data="ASK {}", content_type="application/sparql-query")
    assert response.status_code == 400
    assert response.get_data(as_text=True).startswith("query: ")


def test_update_body_with_a_query_parameter_is_400(client: FlaskClient) -> None:
    response = client.post(
        "/sparql?query=ASK%7B%7D", data="CLEAR ALL", content_type="application/sparql-update"
    )
    assert response.status_code == 400
    assert response.get_data(as_text=True).startswith("query: ")


@pytest.mark.parametrize(
    ("kind", "parameter"),
    [("query", "using-graph-uri"), ("query", "using-named-graph-uri"), ("update", "default-graph-uri")],
)
def test_dataset_parameter_of_the_other_operation_is_400(
    client: FlaskClient, kind: str, parameter: str
) -> None:
    text = "ASK {}" if kind == "query" else "CLEAR ALL"
    response = client.post(f"/sparql?{parameter}={EX}g", data={kind: text})
    assert response.status_code == 400
    assert response.get_data(as_text=True).startswith(f"{parameter}: ")


def test_graph_parameter_that_is_not_an_absolute_iri_is_400(client: FlaskClient) -> None:
    response = client.get("/sparql", query_string={"query": "ASK {}", "named-graph-uri": "not an iri"})
    assert response.status_code == 400
    assert response.get_data(as_text=True).startswith("named-graph-uri: not an absolute IRI")


# --------------------------------------------------------------------------- parse errors


def test_post_bad_query_reports_position(client: FlaskClient) -> None:
    response = client.post(
        "/sparql", data="SELECT * WHERE { ?s ?p ?o }}", content_type="application/sparql-query"
    )
    assert response.status_code == 400
    assert response.mimetype == "text/plain"
    assert response.get_data(as_text=True).startswith("query:1:28: unexpected '}'; expected ")


def test_bad_query_position_counts_lines(client: FlaskClient) -> None:
    response = client.get("/sparql", query_string={"query": "SELECT *\nWHERE { ?s ?p }"})
    assert response.get_data(as_text=True).startswith("query:2:15: ")


def test_bad_update_reports_position(client: FlaskClient) -> None:
    response = client.post("/sparql", data={"update": "CLEAR XYZ"})
    assert response.status_code == 400
    assert response.get_data(as_text=True).startswith("update:1:7: unexpected character 'X'")


def test_error_is_json_when_the_client_accepts_only_json(client: FlaskClient) -> None:
    response = client.get(
        "/sparql", query_string={"query": "ASK {"}, headers={"Accept": "application/sparql-results+json"}
    )
    assert response.status_code == 400
    assert response.mimetype == "application/json"
    error = json.loads(response.data)
    assert (error["status"], error["parameter"], error["line"], error["column"]) == (400, "query", 1, 6)
    assert error["message"].startswith("unexpected end of input")


def test_error_is_plain_text_when_the_client_also_accepts_text(client: FlaskClient) -> None:
    response = client.get(
        "/sparql", query_string={"query": "ASK {"}, headers={"Accept": "application/json, */*"}
    )
    assert response.mimetype == "text/plain"


def test_event_query_posted_to_sparql_points_to_queries(client: FlaskClient) -> None:
    response = client.post(
        "/sparql", data=SMART_GRID_QUERY.read_text(), content_type="application/sparql-query"
    )
    assert response.status_code == 400
    text = response.get_data(as_text=True)
    assert text.startswith("query: this is a continuous event query")
    assert "POST /queries" in text


def test_unknown_route_error_is_plain_text(client: FlaskClient) -> None:
    response = client.get("/no-such-thing")
    assert response.status_code == 404
    assert response.mimetype == "text/plain"


# --------------------------------------------------------------------------- content negotiation
# (the whole Accept matrix is in test_negotiation.py)


@pytest.mark.parametrize("media_type", RESULT_MEDIA_TYPES)
def test_select_in_every_results_format(client: FlaskClient, media_type: str) -> None:
    insert(client, f'<{EX}s> <{EX}p> "x"')
    response = client.get("/sparql", query_string={"query": SELECT_ALL}, headers={"Accept": media_type})
    assert response.mimetype == media_type
    if media_type == "text/csv":  # lossy: pyoxigraph does not read it back
        assert response.get_data(as_text=True) == f"s,p,o\r\n{EX}s,{EX}p,x\r\n"
        return
    solutions = results(response)
    assert isinstance(solutions, ox.QuerySolutions)
    assert [str(row["o"]) for row in solutions] == ['"x"']


def test_accept_with_q_values_picks_csv(client: FlaskClient) -> None:
    accept = "application/sparql-results+xml;q=0.5, text/csv;q=0.9, application/sparql-results+json;q=0.1"
    response = client.get("/sparql", query_string={"query": SELECT_ALL}, headers={"Accept": accept})
    assert response.headers["Content-Type"] == "text/csv; charset=utf-8"


def test_accept_wildcard_gets_the_default(client: FlaskClient) -> None:
    response = client.get("/sparql", query_string={"query": SELECT_ALL}, headers={"Accept": "*/*"})
    assert response.mimetype == "application/sparql-results+json"


def test_nothing_acceptable_is_406(client: FlaskClient) -> None:
    response = client.get("/sparql", query_string={"query": SELECT_ALL}, headers={"Accept": "image/png"})
    assert response.status_code == 406
    assert "application/sparql-results+json" in response.get_data(as_text=True)


@pytest.mark.parametrize(
    ("media_type", "body"), [("text/csv", "true"), ("text/tab-separated-values", "false")]
)
def test_ask_in_csv_and_tsv_is_one_line_as_oxigraph_writes_it(
    client: FlaskClient, media_type: str, body: str
) -> None:
    query = "ASK {}" if body == "true" else f"ASK {{ <{EX}nothing> ?p ?o }}"
    response = client.get("/sparql", query_string={"query": query}, headers={"Accept": media_type})
    assert (response.status_code, response.mimetype) == (200, media_type)
    assert response.get_data(as_text=True) == body


def test_ask_in_xml(client: FlaskClient) -> None:
    response = client.get(
        "/sparql", query_string={"query": "ASK {}"}, headers={"Accept": "application/sparql-results+xml"}
    )
    answer = results(response)
    assert isinstance(answer, ox.QueryBoolean) and bool(answer)


def test_format_parameter_overrides_accept(client: FlaskClient) -> None:
    response = client.get(
        "/sparql", query_string={"query": SELECT_ALL, "format": "tsv"}, headers={"Accept": "text/csv"}
    )
    assert response.mimetype == "text/tab-separated-values"


def test_format_parameter_may_be_a_media_type(client: FlaskClient) -> None:
    response = client.get(
        "/sparql", query_string={"query": SELECT_ALL, "format": "application/sparql-results+xml"}
    )
    assert response.mimetype == "application/sparql-results+xml"


def test_unknown_format_parameter_is_400(client: FlaskClient) -> None:
    response = client.get("/sparql", query_string={"query": SELECT_ALL, "format": "yaml"})
    assert response.status_code == 400
    assert response.get_data(as_text=True).startswith("format: unknown format 'yaml'")


def test_format_that_does_not_fit_the_query_form_is_406(client: FlaskClient) -> None:
    query = f"CONSTRUCT {{ <{EX}s> <{EX}p> 1 }} WHERE {{}}"
    assert client.get("/sparql", query_string={"query": query, "format": "csv"}).status_code == 406


def test_construct_defaults_to_turtle_with_charset(client: FlaskClient) -> None:
    response = client.get("/sparql", query_string={"query": f"CONSTRUCT {{ <{EX}s> <{EX}p> 1 }} WHERE {{}}"})
    assert response.headers["Content-Type"] == "text/turtle; charset=utf-8"
    assert response.headers["Vary"] == "Accept"


@pytest.mark.parametrize("media_type", GRAPH_MEDIA_TYPES)
def test_construct_in_every_graph_format(client: FlaskClient, media_type: str) -> None:
    query = f'CONSTRUCT {{ <{EX}s> <{EX}p> "é" }} WHERE {{}}'
    response = client.get("/sparql", query_string={"query": query}, headers={"Accept": media_type})
    assert response.mimetype == media_type
    triples = list(ox.parse(response.data, ox.RdfFormat.from_media_type(media_type)))
    assert [str(q.object) for q in triples] == ['"é"']


def test_describe_answers_a_graph(client: FlaskClient) -> None:
    insert(client, f"<{EX}s> <{EX}p> 1")
    response = client.get(
        "/sparql", query_string={"query": f"DESCRIBE <{EX}s>"}, headers={"Accept": "text/turtle"}
    )
    assert len(list(ox.parse(response.data, ox.RdfFormat.TURTLE))) == 1


def test_q_zero_refuses_a_type_whatever_name_a_wildcard_also_matches(client: FlaskClient) -> None:
    """`*/*;q=0.1` matches SPARQL JSON as `application/json` too, but the explicit q=0 wins."""
    accept = "application/sparql-results+json;q=0, */*;q=0.1"
    response = client.get("/sparql", query_string={"query": SELECT_ALL}, headers={"Accept": accept})
    assert (response.status_code, response.mimetype) == (200, "application/sparql-results+xml")
    only_json = {"Accept": "application/sparql-results+json;q=0"}
    assert client.get("/sparql", query_string={"query": SELECT_ALL}, headers=only_json).status_code == 406


def test_accept_parsing_ignores_malformed_elements() -> None:
    assert parse_accept("garbage, text/csv;q=abc, text/tsv;q=0.3") == (MediaRange("text", "tsv", 0.3),)
    assert parse_accept("") == parse_accept(None) == (MediaRange("*", "*"),)


# --------------------------------------------------------------------------- the protocol dataset


def test_default_graph_uri_replaces_the_from_of_the_query(client: FlaskClient) -> None:
    insert(client, f"GRAPH <{EX}g1> {{ <{EX}a> <{EX}p> 1 }} GRAPH <{EX}g2> {{ <{EX}b> <{EX}p> 2 }}")
    query = f"ASK FROM <{EX}g1> {{ <{EX}b> <{EX}p> 2 }}"
    assert not ask(client, query)
    assert ask(client, query, **{"default-graph-uri": f"{EX}g2"})


def test_several_default_graph_uris_are_merged(client: FlaskClient) -> None:
    insert(client, f"GRAPH <{EX}g1> {{ <{EX}a> <{EX}p> 1 }} GRAPH <{EX}g2> {{ <{EX}b> <{EX}p> 2 }}")
    query = f"ASK {{ <{EX}a> <{EX}p> 1 . <{EX}b> <{EX}p> 2 }}"
    params = MultiDict([("query", query), ("default-graph-uri", f"{EX}g1"), ("default-graph-uri", f"{EX}g2")])
    response = client.get("/sparql", query_string=params)
    assert json.loads(response.data)["boolean"] is True


def test_named_graph_uri_alone_leaves_the_default_graph_empty(client: FlaskClient) -> None:
    insert(client, f"<{EX}a> <{EX}p> 1 . GRAPH <{EX}g1> {{ <{EX}b> <{EX}p> 2 }}")
    params = {"named-graph-uri": f"{EX}g1"}
    assert not ask(client, f"ASK {{ <{EX}a> <{EX}p> 1 }}", **params)
    assert ask(client, f"ASK {{ GRAPH <{EX}g1> {{ <{EX}b> <{EX}p> 2 }} }}", **params)


def test_relative_iris_resolve_against_the_endpoint(client: FlaskClient) -> None:
    response = client.get(
        "/sparql", query_string={"query": "SELECT (STR(<x>) AS ?v) {}"}, headers={"Accept": "text/csv"}
    )
    assert response.get_data(as_text=True).splitlines()[1] == "http://localhost/x"


# --------------------------------------------------------------------------- updates


def test_update_changes_the_store_and_refreshes_the_knowledge_base(app: Flask, client: FlaskClient) -> None:
    with app.app_context():
        before = resources().kb.version
    response = client.post("/sparql", data={"update": f"INSERT DATA {{ <{EX}s> <{EX}p> 1 }}"})
    assert response.status_code == 204
    assert "Content-Type" not in response.headers
    assert ask(client, f"ASK {{ <{EX}s> <{EX}p> 1 }}")
    with app.app_context():
        assert resources().kb.version > before


def test_using_graph_uri_is_the_where_dataset(client: FlaskClient) -> None:
    insert(client, f"GRAPH <{EX}g1> {{ <{EX}a> <{EX}p> 1 }}")
    update = f"INSERT {{ GRAPH <{EX}out> {{ ?s <{EX}copied> ?o }} }} WHERE {{ ?s <{EX}p> ?o }}"
    response = client.post(
        f"/sparql?using-graph-uri={EX}g1", data=update, content_type="application/sparql-update"
    )
    assert response.status_code == 204
    assert ask(client, f"ASK {{ GRAPH <{EX}out> {{ <{EX}a> <{EX}copied> 1 }} }}")


def test_using_graph_uri_applies_to_delete_where(client: FlaskClient) -> None:
    insert(client, f"GRAPH <{EX}g1> {{ <{EX}a> <{EX}p> 1 }} <{EX}a> <{EX}p> 1")
    update = f"DELETE WHERE {{ <{EX}a> <{EX}p> ?o }}"
    response = client.post(f"/sparql?using-graph-uri={EX}g1", data={"update": update})
    assert response.status_code == 204
    assert not ask(client, f"ASK {{ <{EX}a> <{EX}p> 1 }}")  # deleted from the default graph
    assert ask(client, f"ASK {{ GRAPH <{EX}g1> {{ <{EX}a> <{EX}p> 1 }} }}")


def test_using_parameters_with_a_using_clause_is_400(client: FlaskClient) -> None:
    update = f"INSERT {{ <{EX}a> <{EX}p> 1 }} USING <{EX}g> WHERE {{}}"
    response = client.post(f"/sparql?using-graph-uri={EX}g1", data={"update": update})
    assert response.status_code == 400
    assert response.get_data(as_text=True).startswith("using-graph-uri: ")


def test_using_clauses_go_where_the_parser_says() -> None:
    update = (
        "PREFIX : <http://e/> INSERT { ?s :p 1 } # WHERE?\n WHERE { ?s :q 2 } ; DELETE WHERE { ?s :r ?o }"
    )
    dataset = Dataset(("http://e/g",), ("http://e/n",))
    using = "USING <http://e/g> USING NAMED <http://e/n>"
    assert with_using_clauses(update, dataset) == (
        f"PREFIX : <http://e/> INSERT {{ ?s :p 1 }} {using} # WHERE?\n"
        f" WHERE {{ ?s :q 2 }} ; DELETE {{ ?s :r ?o }} {using} WHERE {{ ?s :r ?o }}"
    )


def test_update_is_run_by_oxigraph_as_sent(tmp_path: Path) -> None:
    """LOAD SILENT of an unreachable document is no error: the text reaches Oxigraph unchanged
    (with remote data allowed for the host: off by default, tests/hardening/test_remote.py)."""
    config = {"RSEP_DATA_DIR": str(tmp_path), "RSEP_START_STREAMING": False, "TESTING": True,
              "RSEP_ALLOW_REMOTE": ("localhost",)}  # fmt: skip
    client = create_app(config).test_client()
    response = client.post("/sparql", data={"update": "LOAD SILENT <http://localhost:1/nothing.ttl>"})
    assert response.status_code == 204


# --------------------------------------------------------------------------- bearer token


@pytest.fixture
def guarded(tmp_path: Path) -> FlaskClient:
    config = {
        "RSEP_DATA_DIR": str(tmp_path),
        "RSEP_START_STREAMING": False,
        "RSEP_TOKEN": "s3cret",
        "TESTING": True,
    }
    return create_app(config).test_client()


def test_token_required_when_configured(guarded: FlaskClient) -> None:
    response = guarded.get("/sparql", query_string={"query": "ASK {}"})
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")


def test_wrong_token_is_401(guarded: FlaskClient) -> None:
    response = guarded.get(
        "/sparql", query_string={"query": "ASK {}"}, headers={"Authorization": "Bearer nope"}
    )
    assert response.status_code == 401


def test_right_token_is_let_through(guarded: FlaskClient) -> None:
    headers = {"Authorization": "Bearer s3cret"}
    assert guarded.get("/sparql", query_string={"query": "ASK {}"}, headers=headers).status_code == 200
    assert guarded.get("/store", headers=headers).status_code == 200


def test_token_guards_the_graph_store_too(guarded: FlaskClient) -> None:
    assert guarded.get("/store?default").status_code == 401


def test_static_page_is_exempt_from_the_token(guarded: FlaskClient) -> None:
    assert guarded.get("/").status_code != 401


def test_no_token_configured_means_no_check(client: FlaskClient) -> None:
    assert client.get("/sparql", query_string={"query": "ASK {}"}).status_code == 200


# --------------------------------------------------------------------------- /query and /update


def test_query_route_answers_queries(client: FlaskClient) -> None:
    response = client.get("/query", query_string={"query": "ASK {}"}, headers={"Accept": "application/json"})
    assert response.status_code == 200 and response.json == {"head": {}, "boolean": True}


def test_query_route_refuses_an_update(client: FlaskClient) -> None:
    response = client.post("/query", data={"update": "CLEAR ALL"})
    assert response.status_code == 400
    assert "/query takes a query, not an update" in response.get_data(as_text=True)
    response = client.post("/query", data="CLEAR ALL", content_type="application/sparql-update")
    assert response.status_code == 415


def test_update_route_runs_updates_and_refuses_queries(client: FlaskClient) -> None:
    update = "INSERT DATA { <http://a> <http://b> <http://c> }"
    assert client.post("/update", data=update, content_type="application/sparql-update").status_code == 204
    assert client.post("/update", data={"update": "CLEAR ALL"}).status_code == 204
    response = client.post("/update", data={"query": "ASK {}"})
    assert response.status_code == 400
    assert "/update takes an update, not a query" in response.get_data(as_text=True)
    assert client.post("/update", data="ASK {}", content_type="application/sparql-query").status_code == 415
