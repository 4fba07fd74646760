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

# The browser tests (tests/browser) drive a headless Chromium: Debian's package, at
# /usr/bin/chromium (RSEP_CHROMIUM names another binary). Playwright's own browser download is
# not used. Installed here with apt-get as root, or with sudo when that needs no password (or
# can ask for one on a terminal); otherwise this says how and stops.
ensure_chromium() {
  local browser="${RSEP_CHROMIUM:-/usr/bin/chromium}"
  if [ -x "$browser" ]; then return 0; fi
  local how="install Debian's chromium package (apt-get install chromium), or set RSEP_CHROMIUM to a Chromium binary"
  if [ -n "${RSEP_CHROMIUM:-}" ]; then
    echo "RSEP_CHROMIUM=$RSEP_CHROMIUM is not an executable file: the browser tests need Chromium" >&2; exit 1
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "the browser tests need Chromium at /usr/bin/chromium: $how" >&2; exit 1
  fi
  local sudo=()
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      sudo=(sudo -n)
    elif command -v sudo >/dev/null 2>&1 && [ -t 0 ]; then
      sudo=(sudo)
    else
      echo "the browser tests need Chromium at /usr/bin/chromium, and installing it needs root: $how" >&2
      exit 1
    fi
  fi
  echo "setup: installing Chromium (Debian package chromium) for the browser tests" >&2
  if ! "${sudo[@]}" apt-get update -qq \
     || ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null \
     || [ ! -x /usr/bin/chromium ]; then
    echo "apt-get could not install chromium: the browser tests need Chromium at /usr/bin/chromium: $how" >&2
    exit 1
  fi
}
if [ -n "$extras" ]; then ensure_chromium; fi

if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
stamp=".venv/.rsep-installed${extras}"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e ".${extras}"
  touch "$stamp"
fi
