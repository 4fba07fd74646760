"""Where the repository and its test fixtures are: paths from this file, never from the working
directory (the shared data folder beside the repository: tests/support/shared_data.py)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
