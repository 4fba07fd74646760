#!/bin/sh
# Regenerate docker/requirements.lock: rsep's dependencies (pyproject.toml, no extras) pinned,
# with the hashes of every file PyPI has for each pinned version. Run from the repository root
# with network access to PyPI; needs Python 3.11 (the image's).
set -eu
venv="$(mktemp -d)/lock"
python3.11 -m venv "$venv"
"$venv/bin/pip" install --quiet pip-tools
"$venv/bin/pip-compile" --quiet --generate-hashes --strip-extras --no-emit-index-url \
    --no-emit-find-links --index-url https://pypi.org/simple \
    --output-file docker/requirements.lock pyproject.toml
rm -rf "$(dirname "$venv")"
