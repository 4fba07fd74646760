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
if ! "$python" -c 'import ensurepip, venv' >/dev/null 2>&1; then
  echo "$python cannot create virtual environments (no venv/ensurepip module): install it, e.g." \
       "apt-get install python3-venv (or python3.11-venv) on Debian and Ubuntu" >&2; exit 1
fi

# Spark 4 runs on Java 17 or newer. The java checked is the one Spark will start: $JAVA_HOME/bin/java
# when JAVA_HOME is set, else java on the PATH (spark-submit's rule).
java_major() {  # the major version `$1 -version` reports: "1.8.0_392" -> 8, "17.0.15" -> 17
  local version
  version=$("$1" -version 2>&1 | sed -n 's/.* version "\([^"]*\)".*/\1/p' | head -n 1)
  case "$version" in
    1.*) version=${version#1.} ;;
  esac
  version=${version%%[!0-9]*}
  echo "${version:-0}"
}
java_hint="install a Java 17 (or newer) runtime, e.g. apt-get install openjdk-17-jre-headless, and put its java on PATH or set JAVA_HOME"
if [ -n "${JAVA_HOME:-}" ]; then
  java="$JAVA_HOME/bin/java"
  if [ ! -x "$java" ]; then
    echo "JAVA_HOME=$JAVA_HOME has no bin/java: $java_hint" >&2; exit 1
  fi
elif command -v java >/dev/null 2>&1; then
  java=$(command -v java)
else
  echo "rsep needs Java 17 or newer for Spark, and there is no java: $java_hint" >&2; exit 1
fi
major=$(java_major "$java")
if [ "$major" -lt 17 ]; then
  found="Java $major"
  if [ "$major" = 0 ]; then found="of an unknown version ($("$java" -version 2>&1 | head -n 1))"; fi
  echo "rsep needs Java 17 or newer for Spark, and $java is $found: $java_hint" >&2
  exit 1
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

# The query page's third-party assets (YASGUI, vis-timeline: ui/package.json, pinned by
# ui/package-lock.json) come from the npm registry and are copied into endpoint/static/vendor,
# which git ignores: they are never committed. Without npm the runtime works and the page at
# /yasgui says how to get them; the browser tests (--test) need them.
ensure_ui_assets() {
  local vendor=endpoint/static/vendor stamp=endpoint/static/vendor/.installed
  if [ -f "$stamp" ] && [ ! ui/package-lock.json -nt "$stamp" ]; then return 0; fi
  if ! command -v npm >/dev/null 2>&1; then
    echo "setup: npm is not installed: the query editor's assets (YASGUI) are missing; install Node.js and npm, then run scripts/setup.sh again" >&2
    if [ -n "$extras" ]; then exit 1; fi
    return 0
  fi
  npm ci --prefix ui --no-audit --no-fund --ignore-scripts --loglevel=error >/dev/null
  rm -rf "$vendor"
  mkdir -p "$vendor/yasgui" "$vendor/vis-timeline"
  cp ui/node_modules/@zazuko/yasgui/build/yasgui.min.js ui/node_modules/@zazuko/yasgui/build/yasgui.min.css "$vendor/yasgui/"
  cp ui/node_modules/@zazuko/yasgui/LICENSE "$vendor/yasgui/" 2>/dev/null || true
  cp ui/node_modules/vis-timeline/standalone/umd/vis-timeline-graph2d.min.js \
     ui/node_modules/vis-timeline/styles/vis-timeline-graph2d.min.css "$vendor/vis-timeline/"
  cp ui/node_modules/vis-timeline/LICENSE* "$vendor/vis-timeline/" 2>/dev/null || true
  touch "$stamp"
}
ensure_ui_assets

if [ ! -x .venv/bin/python ] || ! .venv/bin/python -m pip --version >/dev/null 2>&1; then
  "$python" -m venv --clear .venv  # (again, if an earlier attempt left it without pip)
fi
stamp=".venv/.rsep-installed${extras}"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e ".${extras}"
  touch "$stamp"
fi
