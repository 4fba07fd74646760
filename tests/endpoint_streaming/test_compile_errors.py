"""POST /queries: a query that parses but that the compiler rejects is a 400 at the position of
the construct at fault, as `rsep run` reports it, and nothing is registered."""

from __future__ import annotations

from tests.endpoint_streaming.conftest import service

QUERY = """PREFIX : <http://example.org/>
SELECT *
FROM STREAM S1 <http://example.org/s>
WHERE {
  SEQ (A!; B)
  DEFINE GPM A ON S1 { ?a a :A }
  DEFINE GPM B ON S1 { ?b a :B }
}
"""


def test_post_query_the_compiler_rejects_reports_its_position(app):
    client = app.test_client()
    response = client.post("/queries", data=QUERY, content_type="application/sparql-query")
    assert response.status_code == 400
    assert response.get_data(as_text=True) == (
        "query:5:8: the sequence cannot start with 'A!': an optional or negated element needs an "
        "element before it to delimit the gap it talks about\n"
    )
    as_json = client.post(
        "/queries",
        data=QUERY,
        content_type="application/sparql-query",
        headers={"Accept": "application/json"},
    ).json
    assert (as_json["parameter"], as_json["line"], as_json["column"]) == ("query", 5, 8)
    assert service(app).registry.all() == []
