"""The endpoint fixtures of tests/endpoint_streaming (applications on a data folder in tmp,
in-process engine), for the endpoint tests of this package."""

from tests.endpoint_streaming.conftest import app, data_dir, make_app

__all__ = ["app", "data_dir", "make_app"]
