"""The one nSPARQL path axis SPARQL 1.1 lacks, for CQELS-CEP's nested paths (HiDeSt 2015, §2.3, §3.1).

CQELS-CEP writes nSPARQL's nested regular expressions in SPARQL 1.1 path syntax, with one more
case, `elt[elt]` (`PathNested` in rsep.plugin.algebra.sparql). Its running example's test
`[:means :subway]` is nSPARQL's `[next::means/self::subway]`: the node has a `:means` edge *to
:subway*. The `self::subway` step is `PathSelf`; it only occurs as the last step of a nested test
(the grammar puts it there) and, like PathNested, is compiled away before Oxigraph sees the query
(rsep.plugin.compile.paths).
"""

from __future__ import annotations

from dataclasses import dataclass

from rsep.plugin.algebra.sparql import Node, Term


@dataclass(frozen=True, slots=True)
class PathSelf(Node):
    """nSPARQL `self::a` (Pérez, Arenas, Gutierrez, J. Web Sem. 2010, Table 1):
    [[self::a]]_G = {(a, a)}: a path step that stays on the node `a`."""

    node: Term
