"""Many producers out of order (issue 18, item 4): what an allowed lateness costs in latency.

For each lateness L in `--lateness` it starts `rsep serve --engine inprocess --max-lateness L
--idle-timeout T` (T = `--idle-factor` x L) on a fresh data folder, registers

    SEQ (A; B)   A: ?a b:opens ?k on <.../opens>    B: ?c b:closes ?k on <.../closes>   (key ?k)

and runs `--producers` concurrent producers (threads, one keep-alive connection each) on
loopback: the first half post the `opens` stream, the others the `closes` stream, each event in
its own `POST /streams`. Event times are wall-clock xsd:dateTimes on a grid of `--rate` events per
second; each producer posts each of its events a random delay after its event time, uniform in
[0, `--delay-fraction` x L), so the events of a stream reach the endpoint out of order and the
delays are real. Keys come in blocks of four whose eight events take the block's eight slots in a
random order, so a key matches exactly when its close comes after its open: the oracle (over the
events accepted: one refused beyond the bound takes its key out). They stop after `--duration`
seconds of event time.

It prints, per setting: the refusals (those answered within L of their event time must be 0: such
an event cannot be older than the watermark), the matches pushed (`GET /queries/{id}/events`)
against the oracle and against a sorted replay (`rsep run` over the same accepted events, each
stream's file sorted by time: the match sets, times and bindings, must be equal), and the latency
from each match's completing event time to its push, p50/p99/max. Matches completed within L of
the end of the stream that ends first wait for the idle timeout (that stream silent for T): they
are counted apart (the tail). The baseline, measured in the same run, is one producer posting the
same events in time order without --max-lateness; each setting's added latency is given against it.

    .venv/bin/python -m bench.bench_producers [--quick] [--lateness 0.5,1,2] [--rate 80]
        [--duration 20] [--producers 8] [--delay-fraction 0.5] [--idle-factor 2] [--seed 18]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from bench.bench_latency import REPO, Client, Server, open_events, percentile

OPENS = "http://example.org/bench/opens"
CLOSES = "http://example.org/bench/closes"
QUERY = f"""\
PREFIX b: <http://example.org/bench#>
SELECT ?k ?a ?c
WITHIN 60 SECONDS
FROM STREAM S1 <{OPENS}>
FROM STREAM S2 <{CLOSES}>
WHERE {{
  SEQ (A; B)
  DEFINE GPM A ON S1 {{ ?a b:opens ?k . }}
  DEFINE GPM B ON S2 {{ ?c b:closes ?k . }}
}}
"""
PREFIXES = """\
@prefix b: <http://example.org/bench#> .
@prefix prov: <http://www.w3.org/ns/prov#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
"""
SETTLE_TIMEOUT = 60.0
"""Seconds after the producers stop within which every held event must be released and read."""


# ---------------------------------------------------------------------- the events


@dataclass(frozen=True)
class Planned:
    """One event: key `key`'s open or close, at slot `slot` of the time grid."""

    key: int
    closing: bool
    slot: int
    producer: int
    delay: float
    """Seconds after its event time it is posted."""

    @property
    def stream(self) -> str:
        return CLOSES if self.closing else OPENS

    def trig(self, seconds: float) -> str:
        kind, subject, verb = ("close", "y", "closes") if self.closing else ("open", "x", "opens")
        name = f"<urn:bench:{kind}{self.key}>"
        return (f'{name} {{ <urn:bench:{subject}{self.key}> b:{verb} "k{self.key}" . }}\n'
                f'{name} prov:generatedAtTime "{stamp(seconds)}"^^xsd:dateTime .\n')  # fmt: skip


def stamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def plan(count: int, producers: int, max_delay: float, seed: int) -> list[Planned]:
    """`count` events (a multiple of 8) in blocks of 4 keys whose 8 events take the block's slots
    in a random order; opens go to the first half of the producers, closes to the second."""
    rng, assign = random.Random(seed), random.Random(seed + 1)  # the same keys for every setting
    half = max(1, producers // 2)
    events = []
    for block in range(count // 8):
        slots = list(range(8 * block, 8 * block + 8))
        rng.shuffle(slots)
        for index in range(4):
            key = 4 * block + index
            for closing, slot in ((False, slots[2 * index]), (True, slots[2 * index + 1])):
                producer = assign.randrange(half) + (half if closing and producers > 1 else 0)
                events.append(Planned(key, closing, slot, producer, assign.uniform(0, max_delay)))
    return sorted(events, key=lambda e: e.slot)


# ---------------------------------------------------------------------- one setting


@dataclass
class Posted:
    event: Planned
    time: float
    """The event time (epoch seconds)."""
    sent: float = 0.0
    answered: float = 0.0
    status: int = 0
    message: str = ""


def oracle(posted: Sequence[Posted]) -> set[int]:
    """The keys that match: both their events accepted, the close after the open."""
    accepted = [p.event for p in posted if p.status == 202]
    opened = {e.key: e.slot for e in accepted if not e.closing}
    return {e.key for e in accepted if e.closing and e.slot > opened.get(e.key, e.slot)}


@dataclass
class Setting:
    label: str
    lateness: float | None
    idle: float | None
    posted: list[Posted] = field(default_factory=list)
    pushed: list[tuple[float, dict[str, object]]] = field(default_factory=list)
    """(arrival epoch seconds, the SSE record) per match."""
    summary_matches: int = 0
    replayed: list[dict[str, object]] = field(default_factory=list)
    settled: bool = True


class Listener:
    """The query's Server-Sent Events on a thread: each match with its arrival (epoch seconds)."""

    def __init__(self, port: int, query_id: str, into: list[tuple[float, dict[str, object]]]) -> None:
        self.connection, self.response = open_events(port, query_id)
        self.into = into
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            while line := self.response.readline():
                if line.startswith(b"data: "):
                    self.into.append((time.time(), json.loads(line[len(b"data: ") :])))
        except (OSError, ValueError):
            pass

    def close(self) -> None:
        self.connection.close()


def produce(port: int, mine: list[Posted]) -> None:
    """Post each event at its event time plus its delay, one request each."""
    client = Client(port)
    for item in sorted(mine, key=lambda p: p.time + p.event.delay):
        pause = item.time + item.event.delay - time.time()
        if pause > 0:
            time.sleep(pause)
        path = "/streams?" + urllib.parse.urlencode({"stream": item.event.stream})
        body = (PREFIXES + item.event.trig(item.time)).encode()
        item.sent = time.time()
        status, answer = client.request("POST", path, body, {"Content-Type": "application/trig"})
        item.answered, item.status = time.time(), status
        if status != 202:
            item.message = answer.decode(errors="replace").strip()


def run_setting(setting: Setting, events: list[Planned], rate: float, producers: int, workdir: Path) -> None:
    options: list[str] = []
    if setting.lateness is not None:
        options = ["--max-lateness", f"{setting.lateness:g}"]
    if setting.idle is not None:
        options += ["--idle-timeout", f"{setting.idle:g}"]
    server = Server("inprocess", workdir / f"data-{setting.label}", "local[1]", options)
    try:
        client = Client(server.port)
        status, body = client.request(
            "POST", "/queries", QUERY.encode(), {"Content-Type": "application/sparql-query"}
        )
        if status != 201:
            raise SystemExit(f"POST /queries answered {status}: {body.decode()}")
        query_id = json.loads(body)["id"]
        listener = Listener(server.port, query_id, setting.pushed)
        start = time.time() + 1.0
        setting.posted = [Posted(e, start + e.slot / rate) for e in events]
        lanes: dict[int, list[Posted]] = {}
        for item in setting.posted:
            lanes.setdefault(item.event.producer % producers, []).append(item)
        threads = [threading.Thread(target=produce, args=(server.port, lane)) for lane in lanes.values()]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        setting.settled = settle(client, query_id, setting)
        listener.close()
    finally:
        server.stop()


def settle(client: Client, query_id: str, setting: Setting) -> bool:
    """Wait until nothing is held, the query has read the log and every match was pushed."""
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while time.monotonic() < deadline:
        ingest = json.loads(client.request("GET", "/queries")[1])["ingest"]
        summary = json.loads(client.request("GET", f"/queries/{query_id}")[1])
        setting.summary_matches = summary["matches"]
        if not ingest.get("held") and summary["lag"] == 0 and len(setting.pushed) >= summary["matches"]:
            return True
        time.sleep(0.1)
    return False


# ---------------------------------------------------------------------- the sorted replay


def replay(setting: Setting, workdir: Path) -> list[dict[str, object]]:
    """`rsep run --engine inprocess` over the accepted events, each stream's file sorted by time."""
    folder = workdir / f"replay-{setting.label}"
    folder.mkdir()
    (folder / "query.rq").write_text(QUERY)
    command = [sys.executable, "-m", "rsep.endpoint.cli", "run", str(folder / "query.rq"), "--engine",
               "inprocess", "--format", "jsonl", "--quiet"]  # fmt: skip
    accepted = sorted((p for p in setting.posted if p.status == 202), key=lambda p: p.time)
    for stream in (OPENS, CLOSES):
        path = folder / (stream.rsplit("/", 1)[1] + ".trig")
        mine = [p.event.trig(p.time) for p in accepted if p.event.stream == stream]
        path.write_text(PREFIXES + "".join(mine))
        command += ["--stream", f"{stream}={path}"]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"rsep run failed ({done.returncode}):\n{done.stderr}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def canonical(record: dict[str, object]) -> str:
    return json.dumps({k: record[k] for k in ("start", "end", "bindings")}, sort_keys=True)


# ---------------------------------------------------------------------- the report


def epoch(text: object) -> float:
    return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()


@dataclass(frozen=True)
class Latency:
    steady: list[float]
    """Milliseconds from the completing event's time to the push, before the tail."""
    tail: list[float]


def latency(setting: Setting) -> Latency:
    """The tail: matches completed within L of the end of the stream that ends first. Its newest
    time stops there, and holds the watermark L below it until the stream is idle."""
    ends = [max(p.time for p in setting.posted if p.event.stream == s) for s in (OPENS, CLOSES)]
    cut = math.inf if setting.lateness is None else min(ends) - setting.lateness
    steady: list[float] = []
    tail: list[float] = []
    for arrived, record in setting.pushed:
        end = epoch(record["end"])
        (tail if end > cut else steady).append((arrived - end) * 1000)
    return Latency(steady, tail)


def cells(values: Sequence[float]) -> str:
    if not values:
        return "      (none)"
    return "".join(f"{percentile(values, p):>9.1f}" for p in (50, 99)) + f"{max(values):>9.1f}"


def report(setting: Setting, expected: set[int], baseline: float | None) -> bool:
    """Print one setting; True when it holds (no refusal within the bound, matches right)."""
    lateness = setting.lateness or 0.0
    title = "baseline: one producer, in time order, no --max-lateness" if setting.lateness is None else (
        f"--max-lateness {lateness:g} --idle-timeout {setting.idle:g}")  # fmt: skip
    print(f"\n{title}")
    refused = [p for p in setting.posted if p.status != 202]
    within = [p for p in refused if p.answered - p.time < lateness or setting.lateness is None]
    lags = [p.sent - p.time for p in setting.posted]
    print(f"  posted {len(setting.posted)} events; sent {percentile(lags, 50) * 1000:.0f} ms (p50), "
          f"{max(lags) * 1000:.0f} ms (max) after their event time")  # fmt: skip
    print(f"  refused: {len(refused)}, of which answered within the lateness: {len(within)} (must be 0)")
    if refused:
        print(f"    first: {refused[0].status} {refused[0].message[:200]}")
    pushed = sorted(canonical(record) for _, record in setting.pushed)
    replayed = sorted(canonical(record) for record in setting.replayed)
    keys = {str(json.loads(c)["bindings"]["k"]).strip('"')[1:] for c in pushed}
    right_keys = keys == {str(k) for k in expected}
    same = pushed == replayed
    print(f"  matches pushed: {len(pushed)} (GET /queries/{{id}}: {setting.summary_matches}); oracle "
          f"{len(expected)}: {'equal' if right_keys else 'DIFFERENT'}; sorted replay (rsep run) "
          f"{len(replayed)}: {'equal' if same else 'DIFFERENT'}")  # fmt: skip
    if not setting.settled:
        print(f"  NOT settled within {SETTLE_TIMEOUT:g} s (events still held or unread)")
    found = latency(setting)
    print(f"  {'ms from event time to push':<34}{'n':>6}{'p50':>9}{'p99':>9}{'max':>9}")
    print(f"  {'steady':<34}{len(found.steady):>6}{cells(found.steady)}")
    if found.tail:
        print(f"  {'tail (released by idle timeout)':<34}{len(found.tail):>6}{cells(found.tail)}")
    if baseline is not None and found.steady:
        p50, p99 = percentile(found.steady, 50), percentile(found.steady, 99)
        print(f"  added p50 {p50 - baseline:+.1f} ms ({p50 / baseline:.1f}x the baseline's); "
              f"p99 {p99:.1f} ms = lateness + {p99 - lateness * 1000:.1f} ms")  # fmt: skip
    return not within and right_keys and same and setting.settled


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="3 s of events at 40/s, lateness 0.5 only")
    parser.add_argument("--lateness", help="seconds, comma-separated (default 0.5,1,2)")
    parser.add_argument("--rate", type=float, help="events/s over all producers (default 80)")
    parser.add_argument("--duration", type=float, help="seconds of event time (default 20)")
    parser.add_argument("--producers", type=int, default=8)
    parser.add_argument("--delay-fraction", type=float, default=0.5, help="delays < this x L (default 0.5)")
    parser.add_argument("--idle-factor", type=float, default=2.0, help="idle timeout = this x L (default 2)")
    parser.add_argument("--seed", type=int, default=18)
    args = parser.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # progress shows when piped
    latenesses = [float(x) for x in (args.lateness or ("0.5" if args.quick else "0.5,1,2")).split(",")]
    rate = args.rate or (40.0 if args.quick else 80.0)
    duration = args.duration or (3.0 if args.quick else 20.0)
    count = max(8, round(rate * duration) // 8 * 8)
    print(f"rsep: {args.producers} producers out of order on loopback, SEQ(A; B) over 2 streams, key ?k")
    print(f"machine: {platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}, Python {platform.python_version()}")  # fmt: skip
    print(f"load: {count} events ({count // 2} keys), {rate:g} events/s of event time, one POST each; "
          f"delays uniform in [0, {args.delay_fraction:g} x L); seed {args.seed}")  # fmt: skip
    held = True
    with tempfile.TemporaryDirectory(prefix="rsep-producers-") as folder:
        workdir = Path(folder)
        in_order = [Planned(e.key, e.closing, e.slot, 0, 0.0) for e in plan(count, 1, 0.0, args.seed)]
        base = Setting("baseline", None, None)
        run_setting(base, in_order, rate, 1, workdir)
        base.replayed = replay(base, workdir)
        held = report(base, oracle(base.posted), None)
        found = latency(base).steady
        baseline = percentile(found, 50) if found else None
        for lateness in latenesses:
            events = plan(count, args.producers, args.delay_fraction * lateness, args.seed)
            setting = Setting(f"L{lateness:g}", lateness, args.idle_factor * lateness)
            run_setting(setting, events, rate, args.producers, workdir)
            setting.replayed = replay(setting, workdir)
            held = report(setting, oracle(setting.posted), baseline) and held
    print(f"\n{'every setting holds' if held else 'NOT every setting holds'}: no refusal within the "
          "bound, the oracle's matches, equal to the sorted replay")  # fmt: skip
    return 0 if held else 1


if __name__ == "__main__":
    raise SystemExit(main())
