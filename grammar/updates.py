"""An update's dataset given by the protocol, written into its text.

SPARQL 1.1 Protocol §2.2.3: the `using-graph-uri` and `using-named-graph-uri` parameters of an
update mean the USING clauses of every operation that has a WHERE. pyoxigraph 0.5's
`Store.update` takes no dataset, so the clauses go into the text, at the places the SPARQL 1.1
grammar reads (the clause before WHERE ends); everything else stays as sent. A DELETE WHERE
cannot carry USING, so it is spelled out in its long form `DELETE {P} USING ... WHERE {P}`.
"""

from __future__ import annotations

from collections.abc import Sequence

from lark import Tree

from rsep.grammar.parser import SPARQL_GRAMMAR, get_parser


def with_using_clauses(text: str, default_graphs: Sequence[str], named_graphs: Sequence[str]) -> str | None:
    """The update (which parses as SPARQL 1.1) with the USING clauses of the given graphs, or
    None when one of its operations names its own dataset (USING or WITH), which the protocol's
    parameters may not replace."""
    using = " ".join(
        [f"USING <{iri}>" for iri in default_graphs] + [f"USING NAMED <{iri}>" for iri in named_graphs]
    )
    edits: list[tuple[int, int, str]] = []
    for node in get_parser(SPARQL_GRAMMAR, "update_unit").parse(text).iter_subtrees():
        parts = [child for child in node.children if isinstance(child, Tree)]
        if node.data == "modify":
            if parts[0].data == "iri" or any(part.data == "using_clause" for part in parts):
                return None
            clause_end = parts[-2].meta.end_pos  # the clause before WHERE
            edits.append((clause_end, clause_end, f" {using}"))
        elif node.data == "delete_where":
            quads = text[parts[0].meta.start_pos : parts[0].meta.end_pos]
            edits.append((node.meta.start_pos, node.meta.end_pos, f"DELETE {quads} {using} WHERE {quads}"))
    for start, end, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end:]
    return text
