"""What a query in a forked child costs, and how often a child hangs on a lock copied mid-use
(issue 15, item 4; rsep.plugin.service.query_child).

It opens an on-disk Oxigraph store (RocksDB) of `--quads` quads in a temporary folder, starts
`--writers` threads that keep adding 200-quad batches to it (RocksDB flushes and compacts
meanwhile, on its own threads), and runs `--queries` small queries one after the other, each in
a forked child, then the same number on the calling thread. It prints the latency p50 / p99 / max
of both, how many children were found hung (asleep on a futex before their snapshot) and
retried, and how many queries fell back to a thread. With `--heap MB` the process carries that
much more memory, as a server would (fork copies the page tables).

    .venv/bin/python -m bench.bench_query_child [--queries 1000] [--writers 2] [--heap 0]
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time

import pyoxigraph as ox

from bench.common import latencies
from rsep.plugin import ChildLimits, ChildUnavailable, KnowledgeBase, run_in_child
from rsep.plugin.service import query_child

QUERY = "SELECT (COUNT(*) AS ?c) WHERE { GRAPH <http://e/5> { ?s ?p ?o } }"


def _iri(i: int) -> ox.NamedNode:
    return ox.NamedNode(f"http://e/{i}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--writers", type=int, default=2)
    parser.add_argument("--quads", type=int, default=100_000)
    parser.add_argument("--heap", type=int, default=0, help="MB of extra memory the process holds")
    args = parser.parse_args()
    ballast = [bytearray(b"x" * (1 << 20)) for _ in range(args.heap)]
    kb = KnowledgeBase(ox.Store(tempfile.mkdtemp(prefix="rsep-child-") + "/store"))
    store = kb.store
    store.extend([ox.Quad(_iri(i), _iri(0), ox.Literal(str(i)), _iri(i % 100)) for i in range(args.quads)])
    stop = threading.Event()

    def write(first: int) -> None:
        i = first
        while not stop.is_set():
            store.extend([ox.Quad(_iri(i + k), _iri(1), ox.Literal("x"), _iri(7)) for k in range(200)])
            i += 200
            time.sleep(0.002)

    for w in range(args.writers):
        threading.Thread(target=write, args=(10**7 * (w + 1),), daemon=True).start()
    hung = 0
    attempt = query_child._attempt

    def counted(*given: object) -> bytes | None:
        nonlocal hung
        answer = attempt(*given)  # type: ignore[arg-type]
        hung += answer is None
        return answer

    query_child._attempt = counted  # type: ignore[assignment]

    def query() -> tuple[str, bytes]:
        return kb.query(QUERY, choose=lambda _: "text/csv", base_iri=None, dataset=None)

    forked, threaded, fell_back = [], [], 0
    for _ in range(args.queries):
        began = time.perf_counter()
        try:
            run_in_child(query, kb.probe, ChildLimits(timeout=30))
        except ChildUnavailable:
            fell_back += 1
        forked.append(time.perf_counter() - began)
    for _ in range(args.queries):
        began = time.perf_counter()
        query()
        threaded.append(time.perf_counter() - began)
    stop.set()
    print(f"{args.queries} queries, {args.writers} writers, {args.heap} MB of extra heap ({len(ballast)})")
    print(f"forked      {latencies(forked)}")
    print(f"in-process  {latencies(threaded)}")
    print(f"children found hung and retried: {hung}; queries that fell back to a thread: {fell_back}")


if __name__ == "__main__":
    main()
