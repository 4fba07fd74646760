"""Stream terms that Oxigraph stores in another form than written, joined through BIND and
VALUES in a whole `rsep run` (docs/semantics.md, "SPARQL 1.1 in EP-SPARQL": `stored_nt`).

An integer beyond i64 is kept exactly as written (`"0999…9"` and `"999…9"` are two terms), one
within i64 becomes canonical (`"0123"` and `"123"^^xsd:int` are one term), and a gYear's
`+00:00` is `Z`. Each query runs over one timestamp and is compared with Oxigraph's answer
on the same triples, besides the exact rows."""

from __future__ import annotations

import pyoxigraph
import pytest

from tests.epsparql.harness import Triple, run_rsep

EX = "http://example.org/"
XSD = "http://www.w3.org/2001/XMLSchema#"
PREFIXES = f"PREFIX : <{EX}>\nPREFIX xsd: <{XSD}>\n"
BIG = "9" * 23


def lit(lex: str, datatype: str) -> str:
    return f'"{lex}"^^<{XSD}{datatype}>'


def e(index: int) -> str:
    return f"<{EX}e{index}>"


TRIPLES: list[Triple] = [
    (e(i), f"<{EX}p>", term)
    for i, term in enumerate(
        [
            lit("0" + BIG, "integer"),
            lit(BIG, "integer"),
            lit("9223372036854775808", "integer"),
            lit("0123", "integer"),
            lit("123", "int"),
            lit("2020+00:00", "gYear"),
            lit("2020Z", "gYear"),
            lit("2020", "gYear"),
        ]
    )
]


def rsep_rows(query: str) -> list[dict[str, object]]:
    lines = run_rsep(PREFIXES + query, [(1.0, TRIPLES)])
    assert all((line["start"], line["end"]) == (1, 1) for line in lines)
    return sorted((line["bindings"] for line in lines), key=lambda row: sorted(row.items()))  # type: ignore[union-attr]


def oxigraph_rows(query: str) -> list[dict[str, object]]:
    store = pyoxigraph.Store()
    data = "".join(f"{s} {p} {o} .\n" for s, p, o in TRIPLES)
    store.load(data.encode(), pyoxigraph.RdfFormat.N_TRIPLES)
    result = store.query(PREFIXES + query)
    assert isinstance(result, pyoxigraph.QuerySolutions)
    rows = [{v.value: str(s[v]) for v in result.variables if s[v] is not None} for s in result]
    return sorted(rows, key=lambda row: sorted(row.items()))


def pairs(*indices: tuple[int, int]) -> list[dict[str, object]]:
    return sorted(({"x": e(x), "y": e(y)} for x, y in indices), key=lambda row: sorted(row.items()))


def test_a_bind_copying_a_stream_term_joins_exactly_the_terms_oxigraph_stores_alike():
    """`0999…9` and `999…9` (beyond i64, kept as written) join only themselves; `0123` and
    `123`^^xsd:int are both 123; `2020+00:00` and `2020Z` are one gYear, `2020` another."""
    query = "SELECT ?x ?y WHERE { ?x :p ?v BIND(?v AS ?w) ?y :p ?w }"
    expected = pairs(
        (0, 0), (1, 1), (2, 2), (3, 3), (3, 4), (4, 3), (4, 4), (5, 5), (5, 6), (6, 5), (6, 6), (7, 7)
    )
    assert rsep_rows(query) == expected
    assert oxigraph_rows(query) == expected


@pytest.mark.parametrize(
    ("written", "matches"),
    [
        (lit("0" + BIG, "integer"), [0]),  # beyond i64: only the term written the same way
        (lit(BIG, "integer"), [1]),
        (lit("09223372036854775808", "integer"), []),  # 2^63, written with a 0: no stream term
        (lit("0123", "integer"), [3, 4]),
        (lit("2020+00:00", "gYear"), [5, 6]),
        (lit("2020Z", "gYear"), [5, 6]),
        (lit("2020", "gYear"), [7]),
    ],
)
def test_a_values_constant_joins_the_stream_terms_oxigraph_stores_alike(written: str, matches: list[int]):
    query = f"SELECT ?x WHERE {{ ?x :p ?v VALUES ?v {{ {written} }} }}"
    expected = sorted(({"x": e(i)} for i in matches), key=lambda row: sorted(row.items()))
    assert rsep_rows(query) == expected
    assert oxigraph_rows(query) == expected


def test_a_bind_constant_joins_the_gyear_stream_terms_with_either_timezone_spelling():
    query = 'SELECT ?x WHERE { BIND("2020+00:00"^^xsd:gYear AS ?c) ?x :p ?c }'
    expected = [{"x": e(5)}, {"x": e(6)}]
    assert rsep_rows(query) == expected
    assert oxigraph_rows(query) == expected
