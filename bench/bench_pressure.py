"""How `rsep serve` answers while event-stream listeners and runaway queries press on it
(issue 15, item 4): it starts the server (`--engine`, default the in-process one; `spark` runs
on `local[1]`) on a fresh folder, registers a
query, connects `--listeners` SSE clients, starts `--runaway` queries that take Oxigraph
seconds each, and meanwhile times `--requests` rounds of POST /streams (one event), GET
/queries and GET /sparql (ASK {}). It prints, per route, the statuses seen and the latency
p50 / p99 / max; then it closes the listeners abruptly and times one more round.

With `--query-isolation process` (the default) the runaway queries run in forked children that
the server kills at `--query-timeout`; the script then times how long after their 503s a query
slot is free again (with `thread`, until Oxigraph finishes them: they cannot be stopped), and
counts the server's warnings of queries that fell back to a thread.

    .venv/bin/python -m bench.bench_pressure [--listeners 200] [--runaway 8] [--requests 200] [--after 100]
        [--query-isolation process|thread] [--query-timeout 10] [--engine inprocess|spark]
"""

from __future__ import annotations

import argparse
import http.client
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections import Counter
from pathlib import Path

from bench.common import latencies

QUERY = """PREFIX ex: <http://example.org/>
SELECT ?k FROM STREAM S1 <http://example.org/s> WHERE { SEQ (A) DEFINE GPM A ON S1 { ?k ex:p ?v } }"""
VALUES = " ".join(str(i) for i in range(600))
RUNAWAY = "SELECT (COUNT(*) AS ?n) WHERE { " + " ".join(f"VALUES ?{v} {{{VALUES}}}" for v in "abc") + " }"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def exchange(port: int, method: str, path: str, body: bytes | None = None, ctype: str | None = None) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        connection.request(method, path, body=body, headers={"Content-Type": ctype} if ctype else {})
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


Times = dict[str, list[float]]
Statuses = dict[str, Counter[int]]


def timed_round(port: int, index: int, times: Times, statuses: Statuses) -> None:
    name = f"<http://example.org/e{index}>"
    event = f'{name} <http://example.org/p> "{index}" {name} .\n'.encode()
    calls = {
        "POST /streams": ("POST", "/streams?stream=http://example.org/s", event, "application/n-quads"),
        "GET /queries": ("GET", "/queries", None, None),
        "GET /sparql": ("GET", "/sparql?" + urllib.parse.urlencode({"query": "ASK {}"}), None, None),
    }
    for label, (method, path, body, ctype) in calls.items():
        began = time.perf_counter()
        status = exchange(port, method, path, body, ctype)
        times.setdefault(label, []).append(time.perf_counter() - began)
        statuses.setdefault(label, Counter())[status] += 1


def report(title: str, times: Times, statuses: Statuses) -> None:
    print(title)
    for label, found in times.items():
        print(f"  {label:14} statuses {dict(statuses[label])}  {latencies(found)}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--listeners", type=int, default=200)
    parser.add_argument("--runaway", type=int, default=8)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--after", type=int, default=100, help="rounds timed after the listeners drop")
    parser.add_argument("--query-isolation", choices=("process", "thread"), default="process")
    parser.add_argument("--query-timeout", type=float, default=10.0)
    parser.add_argument("--engine", choices=("inprocess", "spark"), default="inprocess")
    args = parser.parse_args()
    port = free_port()
    folder = Path(tempfile.mkdtemp(prefix="rsep-pressure-"))
    command = [sys.executable, "-m", "rsep.endpoint.cli", "serve", "--port", str(port), "--data", str(folder),
               "--engine", args.engine, "--master", "local[1]", "--query-isolation", args.query_isolation,
               "--query-timeout", str(args.query_timeout)]  # fmt: skip
    log = folder / "server.log"
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log.open("wb"))
    try:
        deadline = time.monotonic() + 180  # the Spark engine starts a JVM
        while True:
            try:
                exchange(port, "GET", "/queries")
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        connection.request(
            "POST", "/queries", body=QUERY.encode(), headers={"Content-Type": "application/sparql-query"}
        )
        answer = connection.getresponse()
        query_id = answer.read().decode().split('"id":')[1].split('"')[1]
        listeners = []
        for _ in range(args.listeners):
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(f"GET /queries/{query_id}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
            listeners.append(sock)
        time.sleep(1)
        runaway_statuses: Counter[int] = Counter()

        def runaway() -> None:
            path = "/sparql?" + urllib.parse.urlencode({"query": RUNAWAY})
            runaway_statuses[exchange(port, "GET", path)] += 1

        threads = [threading.Thread(target=runaway, daemon=True) for _ in range(args.runaway)]
        for thread in threads:
            thread.start()
        time.sleep(1)
        times: Times = {}
        statuses: Statuses = {}
        for index in range(args.requests):
            timed_round(port, index, times, statuses)
        report(f"with {args.listeners} SSE listeners and {args.runaway} runaway queries:", times, statuses)
        for thread in threads:
            thread.join(timeout=120)
        ended = time.perf_counter()
        ask = "/sparql?" + urllib.parse.urlencode({"query": "ASK {}"})
        while exchange(port, "GET", ask) != 200:
            time.sleep(0.05)
        print(f"  runaway queries: statuses {dict(runaway_statuses)}; a query slot free "
              f"{time.perf_counter() - ended:.2f} s after the last runaway's answer")  # fmt: skip
        fell_back = log.read_text(errors="replace").count("cannot be stopped")
        print(f"  queries that fell back to a thread (--query-isolation {args.query_isolation}): {fell_back}")
        for sock in listeners:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            sock.close()  # abruptly: a reset
        times, statuses = {}, {}
        for index in range(args.requests, args.requests + args.after):
            timed_round(port, index, times, statuses)
        report(f"after the {args.listeners} listeners dropped:", times, statuses)
    finally:
        server.terminate()
        server.wait(timeout=60)


if __name__ == "__main__":
    main()
