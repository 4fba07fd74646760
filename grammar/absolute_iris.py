"""The continuous dialects' IRIs are absolute once BASE and the given base resolve them.

rsep runs a continuous query's SPARQL through Oxigraph without a base (GPMs, windows), and a
stream is posted to by its absolute IRI (`POST /streams?stream=`): an IRI that stays relative
would fail in Oxigraph's check with a message about generated SPARQL, or, as a `FROM STREAM`
IRI, name a stream no client can post to. So every IRI left relative is refused where it stands.
"""

from __future__ import annotations

from lark import Token

from rsep.grammar.sparql_transformer import SparqlTransformer
from rsep.plugin.algebra.sparql import IRI, has_scheme


class AbsoluteIris(SparqlTransformer):
    """The base of the transformers of SPAseq, EP-SPARQL, C-SPARQL and CQELS."""

    def iri(self, children: list[Token]) -> IRI:
        found = super().iri(children)
        if not has_scheme(found.value):
            raise self.fail(
                f"<{found.value}> is a relative IRI and the query has no base: declare BASE <...> in "
                "the query (or give a base: rsep run --base, POST /queries?base=)",
                children[0],
            )
        return found
