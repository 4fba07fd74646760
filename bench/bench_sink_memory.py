"""Native memory of writing match graphs into the endpoint's RocksDB store (issue 15, item 8).

In the soak (bench/bench_soak.py) glibc's `used` grew ~2 MB/min with the SEQ queries; heaptrack
in the server put it on RocksDB's block cache: blocks of the quad indexes read while match graphs
are written (the sink's check that a graph is new, and Oxigraph's own check, in `extend`, that
each quad is new). The graph IRIs are hashes, so each check lands at a random place of the index
and reads a block not yet cached, until the cache is full. This script writes `--graphs` match
graphs through `OxigraphMatchSink` into a fresh on-disk store, `--batch` a write, flushing after
every write (as the engine's checkpoints do), and every `--every` graphs prints glibc's `used`
(`mallinfo2`), RSS and the store's size on disk; then the block caches the store's RocksDB log
declares (their capacities: the bound). `--unchecked` writes the same quads with `Store.extend`
alone, without the sink's check, to split the two. Nothing is asserted.

    .venv/bin/python -m bench.bench_sink_memory [--graphs 30000] [--every 3000] [--batch 6] [--unchecked]
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import re
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pyoxigraph as ox

from rsep.plugin.graph_events import Timestamp
from rsep.plugin.nfa.runtime import Match
from rsep.plugin.service.match_graphs import MatchGraph, match_iri
from rsep.plugin.store.kb import KnowledgeBase
from rsep.plugin.store.match_sink import OxigraphMatchSink
from rsep.plugin.store.persistent import open_store

MB = 2**20


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
                 "fordblks", "keepcost")]  # fmt: skip


def glibc_used_mb() -> float:
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = _Mallinfo2
    return float(libc.mallinfo2().uordblks) / MB


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def graph(index: int) -> MatchGraph:
    """A SPAseq-like match graph of the soak's shape (two events, three bindings)."""
    query_id = f"q{index % 5}"
    match = Match((2 * index, 2 * index + 1), 10.0, 20.0, 0, 1, {"k": f"<urn:bench:k{index}>"})
    start = Timestamp(1_800_000_000.0 + index, f"2027-01-15T08:00:{index % 60:02d}Z", False)
    bindings = {"k": f"<urn:bench:k{index}>", "a": f"<urn:bench:a{index}>", "b": f"<urn:bench:b{index}>"}
    return MatchGraph(match_iri(query_id, match), f"urn:rsep:query:{query_id}", start, start,
                      "2027-01-15T08:00:00Z", (f"urn:bench:a{index}", f"urn:bench:b{index}"),
                      ("k", "a", "b"), bindings)  # fmt: skip


def block_caches(store: Path) -> list[str]:
    """The block caches RocksDB's LOG declares: (kind, capacity) and how many column families
    share each (the same address)."""
    text = (store / "LOG").read_text(errors="replace")
    found = re.findall(r"block_cache: (0x[0-9a-f]+)\n\s+block_cache_name: (\w+)\n\s+block_cache_options:\n"
                       r"\s+capacity : (\d+)", text)  # fmt: skip
    shared = Counter(found)
    return [f"{name} {int(capacity) / MB:.0f} MB, shared by {n} column families"
            for (_, name, capacity), n in shared.items()]  # fmt: skip


def disk_mb(folder: Path) -> float:
    total = 0
    for path in folder.iterdir():
        with contextlib.suppress(FileNotFoundError):  # a file compaction removed
            total += path.stat().st_size
    return total / MB


def write_unchecked(kb: KnowledgeBase, graphs: Sequence[MatchGraph]) -> None:
    """The sink's write without its check that each graph is new."""
    quads = ox.parse("".join(g.nquads() for g in graphs), ox.RdfFormat.N_QUADS)
    with kb.writing(default_graph=False, results=True) as store:
        store.extend(quads)


def run(graphs: int, every: int, batch: int, unchecked: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="rsep-sink-") as tmp:
        folder = Path(tmp) / "store"
        kb = KnowledgeBase(open_store(folder))
        sink = OxigraphMatchSink(kb)
        print(f"{'graphs':>8} {'s':>6} {'glibc used MB':>14} {'RSS MB':>8} {'store MB':>9}", flush=True)
        began = time.monotonic()
        for first in range(0, graphs + 1, batch):
            if first % every < batch:
                print(f"{first:8,} {time.monotonic() - began:6.0f} {glibc_used_mb():14.1f} {rss_mb():8.1f} "
                      f"{disk_mb(folder):9.1f}", flush=True)  # fmt: skip
            written = [graph(i) for i in range(first, first + batch)]
            if unchecked:
                write_unchecked(kb, written)
            else:
                sink.write(written)
            sink.flush()
        for line in block_caches(folder):
            print(f"RocksDB block cache: {line}")
        del sink, kb  # closes the store (its background threads) before the folder is removed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs", type=int, default=30_000, help="match graphs written")
    parser.add_argument("--every", type=int, default=3_000, help="graphs between rows")
    parser.add_argument("--batch", type=int, default=6, help="graphs a write (one flush after each)")
    parser.add_argument("--unchecked", action="store_true", help="Store.extend alone, no check of the sink")
    args = parser.parse_args(argv)
    run(args.graphs, args.every, max(1, args.batch), args.unchecked)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
