"""A multipart/form-data POST to /store with no file in it (no part at all, or a body werkzeug
cannot split, such as one without a boundary) is a 400: it was a 201 that created an empty graph
(or a 204 that changed nothing), as if the client had sent an empty file."""

from __future__ import annotations

import pytest

from tests.support.servers import Server, http_exchange

BODIES = [
    ("multipart/form-data; boundary=xx", b"--xx--\r\n"),
    ("multipart/form-data", b'--xx\r\nContent-Disposition: form-data; name="f"; filename="a.nt"\r\n\r\n'
                            b'<http://a> <http://b> "c" .\r\n--xx--\r\n'),
]  # fmt: skip


@pytest.mark.parametrize(("media_type", "body"), BODIES, ids=["no part", "no boundary"])
@pytest.mark.parametrize("path", ["/store", "/store?graph=http://example.org/new", "/store?default"])
def test_a_multipart_body_without_a_file_is_400_and_creates_nothing(
    server: Server, path: str, media_type: str, body: bytes
) -> None:
    status, text = http_exchange(server, "POST", path, body, media_type)
    assert status == 400 and text.startswith("body: missing: one or more files"), text
    assert http_exchange(server, "GET", "/store?graph=http://example.org/new")[0] == 404
