"""Run a command as a whole process and measure it from outside: wall time from start to exit
(start-up included) and the peak memory of its whole process tree (Spark's JVM and Python
workers, PyFlink's JVM), polled from /proc (Linux).

Two sums are sampled at each poll over the root and all its descendants:
- RSS: what `ps` shows per process, summed; pages shared between processes (forked Python
  workers, shared libraries) count once per process, so this overstates a tree;
- PSS (/proc/PID/smaps_rollup): each shared page divided among its sharers, so the sum is
  what the tree holds.
A process may be cut off when the tree exceeds a memory cap, a CPU-time limit (robust on a shared
machine) or a wall-time limit: the whole tree is killed (its process group, and every descendant
found just before, by pid).
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

PAGE = os.sysconf("SC_PAGE_SIZE")
TICKS = os.sysconf("SC_CLK_TCK")
GB = 1024**3
MB = 1024**2


@dataclass
class Outcome:
    returncode: int | None
    wall: float
    peak_rss: int = 0
    """Bytes: the largest sum of RSS over the tree seen at one poll."""
    peak_pss: int = 0
    peak_processes: int = 0
    cpu: float = 0.0
    """CPU seconds (user + system) of the tree: each process's last polled figure, or what the
    root and the children it waited for used (`RUSAGE_CHILDREN`), whichever is more (both miss
    a little: the last poll interval, and children not waited for)."""
    lines: int = 0
    """Lines written on stdout."""
    last_line: str = ""
    stderr_tail: str = ""
    cut_off: str | None = None
    """Why the tree was killed (memory cap, time limit), None when it ended by itself."""
    samples: int = 0

    @property
    def ok(self) -> bool:
        return self.cut_off is None and self.returncode == 0

    def failure(self) -> str:
        """One line saying how the process failed."""
        if self.cut_off is not None:
            return f"cut off: {self.cut_off}"
        lines = [line for line in self.stderr_tail.splitlines() if line.strip()]
        return f"exit {self.returncode}: {lines[-1] if lines else 'no message'}"


@dataclass
class _Stdout:
    lines: int = 0
    last: bytes = b""
    on_line: Callable[[str], None] | None = None
    pending: bytearray = field(default_factory=bytearray)

    def read(self, stream: object) -> None:
        """Count lines (a million matches are a million lines: nothing is kept but the last)."""
        read = getattr(stream, "read1", None) or getattr(stream, "read")  # noqa: B009
        while chunk := read(1 << 20):
            self.lines += chunk.count(b"\n")
            self.pending += chunk
            cut = self.pending.rfind(b"\n")
            if cut < 0:
                continue
            complete, self.pending = bytes(self.pending[:cut]), self.pending[cut + 1 :]
            if self.on_line is not None:
                for line in complete.split(b"\n"):
                    self.on_line(line.decode(errors="replace"))
            self.last = complete[complete.rfind(b"\n") + 1 :]
        if self.pending:
            self.lines += 1
            self.last = bytes(self.pending)
            if self.on_line is not None:
                self.on_line(self.last.decode(errors="replace"))


def descendants(root: int) -> dict[int, float]:
    """`root` and every process below it (by parent pid), from one scan of /proc, with the CPU
    seconds (user + system) each has used so far."""
    children: dict[int, list[int]] = {}
    cpu: dict[int, float] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        # the command name is in parentheses and may hold spaces: the fields after it are fixed
        # (state, ppid, ..., utime and stime are the 2nd, 12th and 13th after it)
        fields = stat[stat.rfind(b")") + 2 :].split()
        pid = int(name)
        children.setdefault(int(fields[1]), []).append(pid)
        cpu[pid] = (int(fields[11]) + int(fields[12])) / TICKS
    tree, todo = {}, [root]
    while todo:
        pid = todo.pop()
        tree[pid] = cpu.get(pid, 0.0)
        todo.extend(children.get(pid, ()))
    return tree


def memory(pids: Sequence[int]) -> tuple[int, int]:
    """(RSS, PSS) summed over `pids`, in bytes; processes that are gone count 0."""
    rss = pss = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/statm", "rb") as handle:
                rss += int(handle.read().split()[1]) * PAGE
            with open(f"/proc/{pid}/smaps_rollup", "rb") as handle:
                for line in handle:
                    if line.startswith(b"Pss:"):
                        pss += int(line.split()[1]) * 1024
                        break
        except (OSError, ValueError, IndexError):
            continue
    return rss, pss


def run(
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    max_rss: int | None = None,
    timeout: float | None = None,
    cpu_limit: float | None = None,
    poll: float = 0.2,
    on_line: Callable[[str], None] | None = None,
) -> Outcome:
    """Run `command` to its end (or until a cap cuts it off), its stdout counted by lines (each
    passed to `on_line`), its stderr kept in a temporary file of which the tail is returned."""
    with tempfile.TemporaryFile() as stderr:
        start = time.perf_counter()
        process = subprocess.Popen(
            list(command),
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            start_new_session=True,  # its own process group, killed whole when cut off
        )
        out = _Stdout(on_line=on_line)
        reader = threading.Thread(target=out.read, args=(process.stdout,), daemon=True)
        reader.start()
        outcome = Outcome(None, 0.0)
        used: dict[int, float] = {}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        try:
            while True:
                try:
                    process.wait(timeout=poll)
                    break
                except subprocess.TimeoutExpired:
                    pass
                tree = descendants(process.pid)
                used.update(tree)
                rss, pss = memory(list(tree))
                outcome.samples += 1
                outcome.peak_rss, outcome.peak_pss = max(outcome.peak_rss, rss), max(outcome.peak_pss, pss)
                outcome.peak_processes = max(outcome.peak_processes, len(tree))
                elapsed = time.perf_counter() - start
                if max_rss is not None and rss > max_rss:
                    outcome.cut_off = (
                        f"RSS {rss / GB:.1f} GB > cap {max_rss / GB:.1f} GB after {elapsed:.0f} s"
                    )
                elif cpu_limit is not None and sum(used.values()) > cpu_limit:
                    outcome.cut_off = f"CPU limit {cpu_limit:.0f} s after {elapsed:.0f} s"
                elif timeout is not None and elapsed > timeout:
                    outcome.cut_off = f"time limit {timeout:.0f} s"
                if outcome.cut_off is not None:
                    break
        finally:  # cut off, or this process interrupted: nothing of the tree is left running
            if process.poll() is None:
                _kill(process.pid)
                process.wait()
        outcome.wall = time.perf_counter() - start
        outcome.returncode = process.returncode
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        waited = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        outcome.cpu = max(sum(used.values()), waited)
        reader.join()
        stderr.seek(0, os.SEEK_END)
        stderr.seek(max(0, stderr.tell() - 4000))
        outcome.stderr_tail = stderr.read().decode(errors="replace")
    outcome.lines, outcome.last_line = out.lines, out.last.decode(errors="replace")
    return outcome


def _kill(root: int) -> None:
    """SIGKILL the process group this module started (its session leader is `root`) and every
    descendant of `root` found just before (one may have left the group)."""
    tree = descendants(root)
    with contextlib.suppress(OSError):
        os.killpg(root, signal.SIGKILL)
    for pid in tree:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
