"""The consuming policies (chronological, recent) on SEQ chains (docs/semantics.md,
"Selection and consumption policies"), checked three ways:

- on random streams and random chains of 2-4 triple patterns, with FILTERs over nodes of the
  chain and inside its operands, the chain and its binary rewriting (EP-SPARQL §5, rules 8-9:
  a `--rule` CONSTRUCT per inner SEQ node deriving the intermediate event, and a two-element
  query) give the same matches under all three policies;
- the same chains against `policies.py`, a reference of RSEP-QL's SEQ^c / SEQ^r and P^c / P^r
  (§4.3-4.4) written from the papers;
- worked examples: the issue's chain, ETALIS's example 02, and where a FILTER stands.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence

from hypothesis import example, given
from hypothesis import strategies as st

from tests.epsparql import strategies as S
from tests.epsparql.harness import Event, run_rsep
from tests.epsparql.policies import POLICIES, chain, conjuncts, detections, window_of
from tests.epsparql.reference import (
    PREFIXES,
    TP,
    Filter,
    Pattern,
    evaluate,
    integer,
    iri,
    results,
    rsep_rows,
    select_query,
    variables,
)
from tests.epsparql.strategies import fast

a, b, c, x = iri("a"), iri("b"), iri("c"), iri("x")
p, q, r = iri("p"), iri("q"), iri("r")
MID = "mid"
"""The variable of an intermediate event's blank node in the binary rewriting (not compared)."""


Chain = tuple[list[Pattern], list[str | None]]
"""The elements (triple patterns, some with a FILTER inside their braces) and, per inner node
of the left-nested chain, the FILTER over it (None: none)."""


@st.composite
def chains(draw: st.DrawFn, filters: bool = True) -> Chain:
    count = draw(st.integers(2, 4))
    elements: list[Pattern] = []
    for _ in range(count):
        element: Pattern = draw(S.triple_patterns())
        if filters and draw(st.integers(0, 4)) == 0:
            element = Filter(element, draw(S.filter_exprs(sorted(variables(element)), time=True)))
        elements.append(element)
    node_filters: list[str | None] = []
    for index in range(1, count):
        bound = sorted(set().union(*(variables(e) for e in elements[: index + 1])))
        wanted = filters and draw(st.integers(0, 2)) == 0
        node_filters.append(draw(S.filter_exprs(bound, time=True)) if wanted else None)
    return elements, node_filters


@st.composite
def unique_streams(draw: st.DrawFn) -> list[Event]:
    """`strategies.streams` with each triple at most once per time (`policies.py`'s model)."""
    events = draw(S.streams(max_events=7))
    seen: set[tuple[float, tuple[str, str, str]]] = set()
    out: list[Event] = []
    for time, graph in events:
        kept = [t for t in graph if (time, t) not in seen]
        seen.update((time, t) for t in kept)
        if kept:
            out.append((time, kept))
    return out


def binary_rewriting(
    elements: Sequence[Pattern], node_filters: Sequence[str | None]
) -> tuple[list[str], str]:
    """The chain as EP-SPARQL §5 binarizes it: a CONSTRUCT rule per inner SEQ node deriving its
    intermediate event (a blank node with one triple per variable bound so far, and a marker),
    and the last node as a two-element query over the last intermediate. A pushed window (a
    top-level `getDURATION() <` conjunct) bounds every rule, as EP-SPARQL attaches it to each."""
    window = [
        conjunct
        for conjunct in conjuncts(node_filters[-1] or "")
        if window_of(Filter(TP("?s", p, "?o"), conjunct)) != float("inf")
    ]
    rules: list[str] = []
    left = elements[0].render()
    bound = set(variables(elements[0]))
    for index, element in enumerate(elements[1:], start=1):
        bound |= variables(element)
        group = f"{{ {left} SEQ {element.render()} }}"
        checks = [f for f in (node_filters[index - 1], *(window if index < len(elements) - 1 else ())) if f]
        body = f"{{ {group} {' '.join(f'FILTER({f})' for f in checks)} }}"
        if index == len(elements) - 1:
            return rules, f"{PREFIXES}SELECT * WHERE {body}\n"
        level = f"i{index}"
        template = " ".join([f"_:m :{level} :m .", *(f"_:m :{level}_{v} ?{v} ." for v in sorted(bound))])
        rules.append(f"{PREFIXES}CONSTRUCT {{ {template} }} WHERE {body}\n")
        triples = [f"?{MID} :{level} :m .", *(f"?{MID} :{level}_{v} ?{v} ." for v in sorted(bound))]
        left = "{ " + " ".join(triples) + " }"
    raise AssertionError("a chain has two elements at least")


def rows(lines: list[dict[str, object]]) -> Counter[str]:
    """rsep's answers as a multiset, without the intermediate's blank node."""
    out: Counter[str] = Counter()
    for line in lines:
        bindings = {k: v for k, v in dict(line["bindings"]).items() if k != MID}  # type: ignore[call-overload]
        out[json.dumps([bindings, line["start"], line["end"]], sort_keys=True)] += 1
    return out


def solution_rows(solutions: Sequence[tuple[frozenset[tuple[str, str]], float, float]]) -> Counter[str]:
    return Counter(json.dumps([dict(m), _number(s), _number(e)], sort_keys=True) for m, s, e in solutions)


def _number(time: float) -> int | float:
    return int(time) if float(time).is_integer() else time


# --------------------------------------------------------------------------- the binary rewriting


@fast(120)
@example(
    ([TP("?x", p, "?y"), TP("?y", p, "?z"), TP("?z", p, "?w")], [None, None]),
    [(1.0, [(a, p, b)]), (2.0, [(b, p, c)]), (3.0, [(c, p, a)]), (4.0, [(a, p, b)]), (5.0, [(b, p, c)])],
)
@example(
    ([TP("?s", p, "?x"), TP("?s", q, "?y"), TP("?s", r, "?z")], [None, None]),
    [(1.0, [(a, p, a)]), (2.0, [(a, p, b)]), (3.0, [(a, q, a)]), (4.0, [(a, q, b)]), (5.0, [(a, r, a)]),
     (6.0, [(a, r, b)])],
)  # fmt: skip
@given(chains(), unique_streams())
def test_a_chain_gives_the_matches_of_its_binary_rewriting(chain_: Chain, events: list[Event]):
    """`A SEQ B SEQ C` ≡ `(A SEQ B) SEQ C` with the inner node a rule of its own, under every
    policy: each SEQ node selects and consumes for itself. The @examples: each triple matches
    all three triple patterns, and each SEQ node (each rule) takes it once in each role it
    fits (rsep used to let one role use it up); the issue's stream, where recent takes the
    partial match whose latest step is the most recent (rsep used to take the one whose first
    input is)."""
    elements, node_filters = chain_
    pattern = chain(elements, node_filters)
    rules, query = binary_rewriting(elements, node_filters)
    for policy in (None, *POLICIES):
        direct = rows(run_rsep(select_query(pattern), events, policy=policy))
        binary = rows(run_rsep(query, events, rules=rules, policy=policy))
        if policy is None:  # a set of solutions (§4.2): the rewriting may derive one twice
            assert set(direct) == set(binary), policy
        else:
            assert direct == binary, policy


# --------------------------------------------------------------------------- RSEP-QL's policies


@fast(150)
@example(
    ([TP("?x", p, "?y"), TP("?y", p, "?z")], [None]),
    [(1.0, [(a, p, b)]), (2.0, [(b, p, c)]), (3.0, [(c, p, a)])],
)
@given(chains(), unique_streams())
def test_a_chain_agrees_with_the_policies_of_rsep_ql(chain_: Chain, events: list[Event]):
    """rsep against `policies.py`, policy by policy; unrestricted against §4.2's reference."""
    pattern = chain(*chain_)
    query = select_query(pattern)
    assert rsep_rows(run_rsep(query, events)) == results(evaluate(pattern, S.occurrences(events)))
    for policy in POLICIES:
        expected = detections(pattern, events, policy)
        assert rows(run_rsep(query, events, policy=policy)) == solution_rows(expected), policy


# --------------------------------------------------------------------------- worked examples


def answers(
    query: str, events: Sequence[Event], policy: str | None = None, rules: Sequence[str] = ()
) -> list[tuple[object, object, dict[str, str]]]:
    lines = run_rsep(PREFIXES + query, events, policy=policy, rules=rules)
    return [(line["start"], line["end"], _short(line["bindings"])) for line in lines]


def _short(bindings: object) -> dict[str, str]:
    out = {}
    for name, term in dict(bindings).items():  # type: ignore[call-overload]
        out[name] = (
            term.split('"')[1] if term.startswith('"') else term.removeprefix("<http://example.org/")[:-1]
        )
    return out


def n(value: int) -> str:
    return integer(value)


ISSUE_STREAM = [
    (1.0, [(x, iri("a"), n(1))]),
    (2.0, [(x, iri("a"), n(2))]),
    (3.0, [(x, iri("b"), n(10))]),
    (4.0, [(x, iri("b"), n(20))]),
    (5.0, [(x, iri("c"), n(100))]),
    (6.0, [(x, iri("c"), n(200))]),
]
ISSUE_CHAIN = "SELECT ?u ?v ?w WHERE { {?x :a ?u} SEQ {?x :b ?v} SEQ {?x :c ?w} }"


def test_recent_takes_the_partial_match_whose_latest_step_is_most_recent():
    """The issue's stream: b10 takes a2 and b20 takes a1 (each the latest waiting :a); c100 then
    takes (a1, b20), the partial match whose latest step (4) is most recent, as `(A SEQ B) SEQ C`
    and ETALIS's `abc <- a seq b seq c` do. rsep used to take (a2, b10), whose first input is
    the later one."""
    assert answers(ISSUE_CHAIN, ISSUE_STREAM, "recent") == [
        (1, 5, {"u": "1", "v": "20", "w": "100"}),
        (2, 6, {"u": "2", "v": "10", "w": "200"}),
    ]
    assert answers(ISSUE_CHAIN, ISSUE_STREAM, "chronological") == [
        (1, 5, {"u": "1", "v": "10", "w": "100"}),
        (2, 6, {"u": "2", "v": "20", "w": "200"}),
    ]


def test_the_chain_written_as_a_rule_and_a_two_element_query_gives_the_same():
    rule = PREFIXES + "CONSTRUCT { _:m :ab :m ; :x ?x ; :u ?u ; :v ?v } WHERE { {?x :a ?u} SEQ {?x :b ?v} }"
    query = "SELECT ?u ?v ?w WHERE { {?m :ab :m ; :x ?x ; :u ?u ; :v ?v} SEQ {?x :c ?w} }"
    for policy in POLICIES:
        assert answers(query, ISSUE_STREAM, policy, [rule]) == answers(ISSUE_CHAIN, ISSUE_STREAM, policy)


def test_a_nested_sequence_on_the_right_is_read_as_the_flat_chain():
    """Not the algebra as written: `{A} SEQ { {B} SEQ {C} }` would select a B for each C first
    (ETALIS's EP-SPARQL front end nests every chain that way, and gives (a2, b20, c100) and
    (a1, b10, c200) here). rsep's automaton commits a partial match when its next step arrives,
    so it reads the right-nested SEQ as the left-nested chain; a rule for `{B} SEQ {C}` gives
    the right-nested reading (docs/semantics.md)."""
    nested = "SELECT ?u ?v ?w WHERE { {?x :a ?u} SEQ { {?x :b ?v} SEQ {?x :c ?w} } }"
    for policy in POLICIES:
        assert answers(nested, ISSUE_STREAM, policy) == answers(ISSUE_CHAIN, ISSUE_STREAM, policy)
    rule = PREFIXES + "CONSTRUCT { _:m :bc :m ; :x ?x ; :v ?v ; :w ?w } WHERE { {?x :b ?v} SEQ {?x :c ?w} }"
    query = "SELECT ?u ?v ?w WHERE { {?x :a ?u} SEQ {?m :bc :m ; :x ?x ; :v ?v ; :w ?w} }"
    assert answers(query, ISSUE_STREAM, "recent", [rule]) == [
        (2, 5, {"u": "2", "v": "20", "w": "100"}),
        (1, 6, {"u": "1", "v": "10", "w": "200"}),
    ]


PRICES = "SELECT ?p1 ?p2 WHERE { {?c :price ?p1} SEQ {?c :price ?p2} FILTER(?p1 < ?p2) }"


def prices(*values: int) -> list[Event]:
    return [(float(t), [(iri("acme"), iri("price"), n(v))]) for t, v in enumerate(values, start=1)]


def test_a_group_filter_applies_to_what_the_policy_selected():
    """ETALIS's example 02 over 3, 2, 5, 4: at 2, 2 selects the waiting 3 (3 < 2 fails: no
    match, and 3 is consumed); 2 also waits, as the first operand (each triple pattern reads
    the stream on its own); at 3, 5 selects 2 (a match); at 4, 4 selects 5 (fails). FILTER(F,
    SEQ(A, B)): F reads what SEQ selected. Before, only pairs that passed F could be selected,
    and chronological paired 3 with 5 and 2 with 4."""
    for policy in POLICIES:
        assert answers(PRICES, prices(3, 2, 5, 4), policy) == [(2, 3, {"p1": "2", "p2": "5"})]


def test_a_filter_inside_an_operand_applies_before_the_selection():
    """`{?c :price ?p2 FILTER(?p2 > 4)}`: 4 is no input of the second operand, so it selects
    nothing and consumes nothing; the same FILTER over the group lets 4 select 3 and fail."""
    inside = "SELECT ?p1 ?p2 WHERE { {?c :price ?p1} SEQ {?c :price ?p2 FILTER(?p2 > 4)} }"
    outside = "SELECT ?p1 ?p2 WHERE { {?c :price ?p1} SEQ {?c :price ?p2} FILTER(?p2 > 4) }"
    events = prices(3, 4, 5)
    assert answers(inside, events, "chronological") == [(1, 3, {"p1": "3", "p2": "5"})]
    assert answers(inside, events, "recent") == [(2, 3, {"p1": "4", "p2": "5"})]
    for policy in POLICIES:
        assert answers(outside, events, policy) == [(2, 3, {"p1": "4", "p2": "5"})]


def test_each_triple_pattern_consumes_an_input_for_itself():
    """`{?x :p ?y} SEQ {?y :p ?z}` over a p b (1), b p c (2), c p a (3): b p c is the second
    element of the first match and, as the first element, waits for the second: c p a takes it.
    RSEP-QL gives each BEP its own window input (§4.4); ETALIS consumes goals, not events."""
    events = [(1.0, [(a, p, b)]), (2.0, [(b, p, c)]), (3.0, [(c, p, a)])]
    query = "SELECT * WHERE { {?x :p ?y} SEQ {?y :p ?z} }"
    for policy in POLICIES:
        assert answers(query, events, policy) == [
            (1, 2, {"x": "a", "y": "b", "z": "c"}),
            (2, 3, {"x": "b", "y": "c", "z": "a"}),
        ]


def test_an_inner_node_consumes_what_its_match_used():
    """`{:a :q :b} SEQ {?y :p ?z} SEQ {?x :q ?z}` over a q b (1), a p b (4), a p a (5),
    b q a (6): the inner node (`{:a :q :b} SEQ {?y :p ?z}`) pairs a q b with a p b at 4 and
    consumes a q b, so a p a at 5 has nothing to pair with and the unrestricted solution
    [1,6] is not found: the binary reading, and ETALIS's `q(a,b) seq p(Y,Z) seq q(X,Z)`.
    (ETALIS's EP-SPARQL front end nests to the right and finds it.)"""
    events = [(1.0, [(a, q, b)]), (4.0, [(a, p, b)]), (5.0, [(a, p, a)]), (6.0, [(b, q, a)])]
    query = "SELECT * WHERE { {:a :q :b} SEQ {?y :p ?z} SEQ {?x :q ?z} }"
    assert answers(query, events) == [(1, 6, {"x": "b", "y": "a", "z": "a"})]
    for policy in POLICIES:
        assert answers(query, events, policy) == []
