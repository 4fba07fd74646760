#!/usr/bin/env bash
# Sets up rsep in .venv at the repository root (idempotent, fast when nothing changed).
#   scripts/setup.sh          the runtime
#   scripts/setup.sh --test   the runtime plus the test tools
set -euo pipefail
cd "$(dirname "$0")/.."

extras=""
if [ "${1:-}" = "--test" ]; then extras="[test]"; fi

python=""
for candidate in "${PYTHON:-}" python3.11 python3 python; do
  if [ -n "$candidate" ] && command -v "$candidate" >/dev/null 2>&1 \
     && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    python="$candidate"; break
  fi
done
if [ -z "$python" ]; then
  echo "rsep needs Python 3.11 or newer (set PYTHON=/path/to/python3.11)" >&2; exit 1
fi
if ! command -v java >/dev/null 2>&1 && [ -z "${JAVA_HOME:-}" ]; then
  echo "rsep needs Java 17 for Spark: install a JDK 17 and put java on PATH (or set JAVA_HOME)" >&2; exit 1
fi

if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
stamp=".venv/.rsep-installed${extras}"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e ".${extras}"
  touch "$stamp"
fi
