"""Where the shared data lives: the repository's sibling folder `shared/data`
(RSEP_SHARED_DATA overrides). Missing data fails the tests that need it."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"


def shared_data() -> Path:
    root = Path(os.environ.get("RSEP_SHARED_DATA", REPO.parent / "shared" / "data"))
    if not root.is_dir():
        raise FileNotFoundError(
            f"shared test data not found at {root}: clone the repository next to the `shared` folder "
            "or set RSEP_SHARED_DATA to its `data` directory"
        )
    return root
