"""Content negotiation: which media type to answer with, and what a request body is.

The answer is chosen by the `format=` parameter if present (a short name such as `csv` or a media
type; SPARQLWrapper and many SPARQL endpoints use it), otherwise by the Accept header with its
q-values (RFC 9110 §12.5.1: the most specific range that matches a media type gives its quality).
Offers are the canonical media types of `rsep.plugin.store.sparql_service`; the aliases below are
the other names clients use for them, which also differ by what is being offered
(`application/json` asks for SPARQL JSON results from a SELECT but JSON-LD from a CONSTRUCT). An
answer an alias chose carries the alias as its Content-Type, so that it is one the client accepted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from flask import request

from rsep.endpoint.http_errors import BadRequest, NotAcceptable

ALIASES: dict[str, tuple[str, ...]] = {
    "application/sparql-results+json": ("application/json",),
    "application/sparql-results+xml": ("application/xml", "text/xml"),
    "text/turtle": ("application/x-turtle", "application/turtle", "text/n3", "text/rdf+n3"),
    "application/rdf+xml": ("application/xml", "text/xml"),
    "application/ld+json": ("application/json", "application/x-json+ld"),
    "application/n-quads": ("text/x-nquads",),
    "application/trig": ("application/x-trig",),
}
"""Other media types that name a canonical one (`text/n3`: Turtle is a subset of N3)."""

FORMAT_NAMES: dict[str, tuple[str, ...]] = {
    "json": ("application/sparql-results+json", "application/ld+json"),
    "srj": ("application/sparql-results+json",),
    "xml": ("application/sparql-results+xml", "application/rdf+xml"),
    "srx": ("application/sparql-results+xml",),
    "csv": ("text/csv",),
    "tsv": ("text/tab-separated-values",),
    "turtle": ("text/turtle",),
    "ttl": ("text/turtle",),
    "n3": ("text/turtle",),
    "ntriples": ("application/n-triples",),
    "n-triples": ("application/n-triples",),
    "nt": ("application/n-triples",),
    "rdfxml": ("application/rdf+xml",),
    "rdf+xml": ("application/rdf+xml",),
    "rdf": ("application/rdf+xml",),
    "jsonld": ("application/ld+json",),
    "json-ld": ("application/ld+json",),
    "nquads": ("application/n-quads",),
    "n-quads": ("application/n-quads",),
    "nq": ("application/n-quads",),
    "trig": ("application/trig",),
}
"""`format=` values, each with the media types it may mean, tried in order against the offers."""


@dataclass(frozen=True, slots=True)
class MediaRange:
    """One element of an Accept header: `type/subtype` (either may be `*`) and its quality."""

    type: str
    subtype: str
    q: float = 1.0

    def specificity(self, media_type: str) -> int | None:
        """2 for an exact match, 1 for `type/*`, 0 for `*/*`, None if the range does not match."""
        kind, _, sub = media_type.partition("/")
        if self.type == "*":
            return 0
        if self.type != kind:
            return None
        if self.subtype == "*":
            return 1
        return 2 if self.subtype == sub else None


ANYTHING = (MediaRange("*", "*"),)


def parse_accept(header: str | None) -> tuple[MediaRange, ...]:
    """The ranges of an Accept header; no header (or an empty one) accepts anything.
    Malformed elements are ignored, as browsers and proxies send odd ones."""
    if header is None or not header.strip():
        return ANYTHING
    ranges = []
    for element in header.split(","):
        parsed = _media_range(element)
        if parsed is not None:
            ranges.append(parsed)
    return tuple(ranges)


def _media_range(element: str) -> MediaRange | None:
    essence, *params = (part.strip() for part in element.split(";"))
    kind, slash, sub = essence.lower().partition("/")
    if not slash or not kind or not sub or (kind == "*" and sub != "*"):
        return None
    q = 1.0
    for param in params:
        name, _, value = param.partition("=")
        if name.strip().lower() == "q":
            try:
                q = min(max(float(value.strip()), 0.0), 1.0)
            except ValueError:
                return None
    return MediaRange(kind, sub, q)


@dataclass(frozen=True, slots=True)
class Choice:
    """A negotiated answer: the offer to serialise as, and the media type to label it with: the
    offer itself, or the alias whose own Accept entry chose it (`Accept: application/json` on a
    SELECT is answered as `application/json`), so the Content-Type is always one the client
    accepted."""

    offer: str
    media_type: str


def quality(offer: str, ranges: Sequence[MediaRange]) -> tuple[float, str]:
    """(q, the name to answer with) that the ranges give an offer, the most specific match deciding
    (RFC 9110 §12.5.1): the offer named exactly, else one of its aliases named exactly (the best
    of them), else the most specific wildcard that matches the offer itself. A wildcard never
    matches an alias: `text/*` accepts `text/csv`, not SPARQL XML results as `text/xml`."""
    exact = [r.q for r in ranges if r.specificity(offer) == 2]
    if exact:
        return max(exact), offer
    aliases = [(r.q, name) for name in ALIASES.get(offer, ()) for r in ranges if r.specificity(name) == 2]
    if aliases:
        return max(aliases, key=lambda alias: alias[0])  # ties: the first alias of ALIASES
    wildcards = [(spec, r.q) for r in ranges if (spec := r.specificity(offer)) is not None]
    return (max(wildcards)[1] if wildcards else 0.0), offer


def choose(offers: Sequence[str], ranges: Sequence[MediaRange]) -> Choice | None:
    """The offer with the highest quality, ties going to the order of `offers` (the server's
    preference; the order of the Accept header means nothing, RFC 9110 §12.5.1)."""
    best: tuple[float, Choice] | None = None
    for offer in offers:
        q, name = quality(offer, ranges)
        if q > 0 and (best is None or q > best[0]):
            best = (q, Choice(offer, name))
    return None if best is None else best[1]


def by_format_name(value: str, offers: Sequence[str]) -> str | None:
    """The offer a `format=` value means: a short name or a media type (or one of its aliases)."""
    value = value.strip().lower()
    candidates = FORMAT_NAMES.get(value) or (value.split(";")[0].strip(),)
    for candidate in candidates:
        found = canonical(candidate, offers)
        if found is not None:
            return found
    return None


def canonical(media_type: str, offers: Sequence[str]) -> str | None:
    """The offer that `media_type` (an essence, no parameters) names directly or as an alias."""
    for offer in offers:
        if media_type == offer or media_type in ALIASES.get(offer, ()):
            return offer
    return None


def is_known_format_name(value: str) -> bool:
    value = value.strip().lower()
    return value in FORMAT_NAMES or "/" in value


def negotiate(
    offers: Sequence[str], *, accept: str | None, format_value: str | Sequence[str] | None
) -> Choice:
    """What to answer with; 400 for an unknown `format=`, 406 when nothing fits. A `format=`
    value is answered with the offer it names, under its canonical name; several values
    (`format_names`) are alternatives, the first that names an offer deciding."""
    available = ", ".join(offers)
    names = format_names(format_value)
    if names:
        for name in names:
            if not is_known_format_name(name):
                raise BadRequest(f"unknown format {name!r}; use one of {available}", parameter="format")
        for name in names:
            found = by_format_name(name, offers)
            if found is not None:
                return Choice(found, found)
        raise NotAcceptable(f"format={', '.join(names)} is not available here; available: {available}")
    chosen = choose(offers, parse_accept(accept))
    if chosen is None:
        raise NotAcceptable(f"cannot answer in any media type of Accept: {accept}; available: {available}")
    return chosen


def format_names(values: str | Sequence[str] | None) -> list[str]:
    """The names that `format=` values give, in order. SPARQLWrapper sends `format` twice on
    purpose (for TSV, RDF/XML and JSON-LD: a short name, then the media types of its Accept
    header joined by commas, or an empty value for `*/*`); Oxigraph answers such a request, so
    every value counts, each split at commas, empty ones ignored."""
    if values is None:
        return []
    given = [values] if isinstance(values, str) else list(values)
    return [name.strip() for value in given for name in value.split(",") if name.strip()]


def negotiate_request(offers: Sequence[str]) -> Choice:
    """`negotiate` for the current request (`format` from the URL or a form body, all its values)."""
    values = request.values.getlist("format")
    return negotiate(offers, accept=request.headers.get("Accept"), format_value=values or None)


def content_type(media_type: str) -> str:
    """The Content-Type header for a media type we produce: text types say their charset."""
    if media_type.startswith("text/") and "charset" not in media_type:
        return f"{media_type}; charset=utf-8"
    return media_type


@dataclass(frozen=True, slots=True)
class ContentType:
    """A request's Content-Type: the essence (lowercase, no parameters) and its charset, if any."""

    media_type: str
    charset: str | None = None

    @property
    def utf8(self) -> bool:
        return self.charset is None or self.charset.lower().replace("_", "-") in ("utf-8", "utf8")


def parse_content_type(header: str | None) -> ContentType | None:
    if header is None or not header.strip():
        return None
    essence, *params = (part.strip() for part in header.split(";"))
    charset = None
    for param in params:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset":
            charset = value.strip().strip('"')
    return ContentType(essence.lower(), charset)
