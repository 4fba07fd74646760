"""Placeholder: being written."""

from flask import Flask


def init_app(app: Flask) -> None:
    """Register this module's blueprint and extensions."""
