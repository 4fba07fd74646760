#!/bin/sh
# A longer fuzz run of every route and dialect parser (tests/hardening/test_fuzz.py):
#   scripts/fuzz.sh [EXAMPLES]   (default 5000 per test; the suite runs 120)
# Prints pytest's summary; any 5xx or trace of a refused write fails with the request that did it.
set -eu
cd "$(dirname "$0")/.."
RSEP_FUZZ_EXAMPLES="${1:-5000}" exec .venv/bin/python -m pytest -q -p no:cacheprovider \
    tests/hardening/test_fuzz.py --hypothesis-show-statistics
