"""`GET /queries/{id}/results`: a continuous query's matches as SPARQL results, one row per match.

A match graph holds its solution in the result-set vocabulary, one `rs:binding` per variable
(docs/endpoint.md, "Results"), which a client would have to pivot. This route runs the pivot:
one SPARQL SELECT over the store with a column per projected variable, next to `match` (the
match graph), `start` and `end` (the match's interval, a CQELS-CEP solution's own when it has
one) and `detected` (when it was found), in event-time order. Window queries give one row per
solution of each evaluation. The store answers it, so it is Oxigraph that serialises: SPARQL
JSON by default, or XML, CSV, TSV by content negotiation as on /sparql.
"""

from __future__ import annotations

import re

from flask import Blueprint, Flask, Response

from rsep.endpoint.engines import compile_registered, streaming
from rsep.endpoint.http_errors import NotFound
from rsep.endpoint.negotiation import content_type, negotiate_request
from rsep.endpoint.resources import resources
from rsep.plugin import OFFERS, QueryForm, QueryPlan, RegisteredQuery, WindowPlan, output_variables

bp = Blueprint("results", __name__)

PREFIXES = """PREFIX rs: <http://www.w3.org/2001/sw/DataAccess/tests/result-set#>
PREFIX rsep: <https://w3id.org/rsep#>
PREFIX prov: <http://www.w3.org/ns/prov#>
"""
COLUMNS = ("match", "start", "end", "detected")
"""rsep's own columns, before the query's variables."""
_VARNAME = re.compile(r"^(?!__)[A-Za-z0-9_\u00b7\u00c0-\ufffd]+$")
"""A SPARQL variable name (VARNAME), not one of the pivot's own `__` names."""


@bp.get("/queries/<query_id>/results")
def results(query_id: str) -> Response:
    query = streaming().registry.get(query_id)
    if query is None:
        raise NotFound(f"no continuous query {query_id}")
    text = results_query(query.iri, variables(query))
    labels: dict[str, str] = {}

    def choose(form: QueryForm) -> str:
        chosen = negotiate_request(OFFERS[form])
        labels[chosen.offer] = chosen.media_type
        return chosen.offer

    media_type, body = resources().kb.query(text, choose=choose, base_iri=None, dataset=None)
    response = Response(body, content_type=content_type(labels[media_type]))
    response.vary.add("Accept")
    return response


def variables(query: RegisteredQuery) -> list[str]:
    """The query's projected variables in SELECT order (the ones its match graphs name, for a
    `SELECT *` window query; none for CONSTRUCT)."""
    try:
        plan = compile_registered(query)
    except ValueError:  # no longer compiles (an upgrade): the names its graphs hold
        plan = None
    stored = stored_variables(query.iri)
    if isinstance(plan, QueryPlan):
        names: list[str] = list(plan.output_vars) if stored else []
    elif isinstance(plan, WindowPlan):
        names = list(output_variables(plan, sorted(stored))) if stored else []
    else:
        names = sorted(stored)
    return [name for name in names if _VARNAME.match(name)]


def stored_variables(query_iri: str) -> set[str]:
    rows = resources().kb.select(
        PREFIXES
        + f"""SELECT DISTINCT ?name WHERE {{
  GRAPH <urn:rsep:matches> {{ ?match prov:wasGeneratedBy <{query_iri}> }}
  GRAPH ?match {{ ?set rs:resultVariable ?name }}
}}"""
    )
    return {_lexical(row["name"]) for row in rows}


def _lexical(term: str) -> str:
    """The value of a plain literal as `KnowledgeBase.select` writes it (N-Triples)."""
    return term[1:-1] if term.startswith('"') and term.endswith('"') else term


def results_query(query_iri: str, names: list[str]) -> str:
    """The pivot: one row per solution of the query's match graphs, a column per variable
    (helper variables start with `__`, which no projected variable of rsep's plans does)."""
    own = _own_columns(names)
    match, start, end, detected = (f"?{own[c]}" for c in COLUMNS)
    bindings = "\n".join(
        f"  OPTIONAL {{ GRAPH {match} {{ ?__solution rs:binding [ {_binding(name)} ] }} }}" for name in names
    )
    head = " ".join([match, start, end, detected, *(f"?{name}" for name in names)])
    return (
        PREFIXES
        + f"""SELECT {head} WHERE {{
  GRAPH <urn:rsep:matches> {{
    {match} prov:wasGeneratedBy <{query_iri}> ; rsep:start ?__start ; rsep:end ?__end ;
      prov:generatedAtTime {detected}
  }}
  OPTIONAL {{ GRAPH {match} {{ ?__set rs:solution ?__solution }} }}
  OPTIONAL {{ GRAPH {match} {{ ?__solution rs:index ?__index }} }}
  OPTIONAL {{ GRAPH {match} {{ ?__solution rsep:start ?__own_start ; rsep:end ?__own_end }} }}
{bindings}
  BIND (COALESCE(?__own_start, ?__start) AS {start})
  BIND (COALESCE(?__own_end, ?__end) AS {end})
}}
ORDER BY {end} {start} {match} ?__index"""
    )


def _binding(name: str) -> str:
    return f'rs:variable "{name}" ; rs:value ?{name}'


def _own_columns(names: list[str]) -> dict[str, str]:
    """rsep's column names, each prefixed with `_` while a variable of the query has it."""
    own = {}
    for column in COLUMNS:
        name = column
        while name in names:
            name = f"_{name}"
        own[column] = name
    return own


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)
