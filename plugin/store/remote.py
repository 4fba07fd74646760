"""Which remote addresses Oxigraph may fetch: `SERVICE` and `LOAD` (server-side request forgery).

Oxigraph fetches the IRI of a `SERVICE` (even in a GET query) and of a `LOAD` over HTTP, and
its answer or error goes back to the client: any address the server reaches, internal ones
included, could be read or scanned. So every text the store runs is first scanned here (one
regular-expression pass that skips strings and comments, and reads `PREFIX` and `BASE`), and a
`SERVICE` or `LOAD` whose target is not allowed is refused with its position before Oxigraph
sees the text. `RemotePolicy()` (the default) allows none; `rsep serve --allow-remote
a.example,b.example` allows http(s) IRIs of those hosts (`*`: any host, and variables).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from rsep.plugin.errors import InvalidInput

_TOKENS = re.compile(
    r"""
      (?P<skip>
          \"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"
        | '''(?:[^'\\]|\\.|'(?!''))*'''
        | "(?:[^"\\\n\r]|\\.)*"
        | '(?:[^'\\\n\r]|\\.)*'
        | \#[^\n\r]*
      )
    | (?P<iri><[^<>"{}|^`\\\x00-\x20]*>)
    | (?P<pname>(?:[A-Za-z_\u00c0-\U000effff][\w.\-\u00b7\u00c0-\U000effff]*)?
               :[\w.\-:%\\\u00b7\u00c0-\U000effff]*)
    | (?P<var>[?$][\w\u00b7\u00c0-\U000effff]*)
    | (?P<word>[A-Za-z_][\w\-]*)
    | (?P<other>\S)
    """,
    re.VERBOSE,
)


_KEYWORDS = re.compile(r"service|load", re.IGNORECASE)


class RemoteRefused(InvalidInput):
    """A `SERVICE` or `LOAD` of an address the server is not allowed to fetch."""


@dataclass(frozen=True, slots=True)
class RemoteCall:
    """A `SERVICE` or `LOAD` in a text: where, which, and its target (None: a variable)."""

    offset: int
    keyword: str
    target: str | None


@dataclass(frozen=True, slots=True)
class RemotePolicy:
    """The hosts `SERVICE` and `LOAD` may reach: none (the default), some, or `*` (any)."""

    hosts: frozenset[str] = frozenset()

    def check(self, text: str, *, base_iri: str | None, source: str) -> None:
        """Raise `RemoteRefused`, at its keyword, for the first call the policy does not allow."""
        for call in remote_calls(text, base_iri):
            reason = self._refusal(call)
            if reason is not None:
                line = text.count("\n", 0, call.offset) + 1
                column = call.offset - (text.rfind("\n", 0, call.offset) + 1) + 1
                raise RemoteRefused(reason, source=source, line=line, column=column)

    def _refusal(self, call: RemoteCall) -> str | None:
        if "*" in self.hosts:
            return None
        what = (
            f"{call.keyword} <{call.target}>" if call.target is not None else f"{call.keyword} of a variable"
        )
        if not self.hosts:
            return (
                f"{what}: this server fetches no remote data (start rsep serve with --allow-remote "
                "HOST[,HOST...] to allow SERVICE and LOAD to those hosts)"
            )
        if call.target is None:
            return f"{what}: only --allow-remote '*' allows a target named by a variable"
        parts = urlsplit(call.target)
        if parts.scheme not in ("http", "https") or (parts.hostname or "") not in self.hosts:
            return f"{what}: not an http(s) address of an allowed host ({', '.join(sorted(self.hosts))})"
        return None


@functools.lru_cache(maxsize=64)
def remote_calls(text: str, base_iri: str | None) -> tuple[RemoteCall, ...]:
    """The `SERVICE` and `LOAD` calls of a query or update, with their targets resolved."""
    if not _KEYWORDS.search(text):
        return ()
    prefixes: dict[str, str] = {}
    base = base_iri or ""
    tokens = [(m.lastgroup, m.group(), m.start()) for m in _TOKENS.finditer(text) if m.lastgroup != "skip"]
    calls = []
    for index, (kind, value, offset) in enumerate(tokens):
        if kind != "word":
            continue
        word = value.upper()
        following = tokens[index + 1 : index + 4]
        if (
            word == "PREFIX"
            and len(following) >= 2
            and following[0][0] == "pname"
            and following[1][0] == "iri"
        ):
            prefixes[following[0][1].rstrip(":")] = urljoin(base, following[1][1][1:-1])
        elif word == "BASE" and following and following[0][0] == "iri":
            base = urljoin(base, following[0][1][1:-1])
        elif word in ("SERVICE", "LOAD"):
            if following and following[0][0] == "word" and following[0][1].upper() == "SILENT":
                following = following[1:]
            target: str | None = None
            if following and following[0][0] == "iri":
                target = urljoin(base, following[0][1][1:-1])
            elif following and following[0][0] == "pname":
                prefix, _, local = following[0][1].partition(":")
                target = prefixes.get(prefix, f"{prefix}:") + local
            calls.append(RemoteCall(offset, word, target))
    return tuple(calls)


_policy = RemotePolicy()


def allow_remote(hosts: Iterable[str]) -> None:
    """Set the process's policy (`rsep serve --allow-remote`; nothing: no remote calls). One per
    process, as the store is: every text any part of rsep runs on Oxigraph is checked with it."""
    global _policy
    _policy = RemotePolicy(frozenset(host.strip().lower() for host in hosts if host.strip()))


def check_remote(text: str, *, base_iri: str | None = None, source: str = "query") -> None:
    """`RemoteRefused` for a SERVICE or LOAD of `text` the process's policy does not allow."""
    _policy.check(text, base_iri=base_iri, source=source)
