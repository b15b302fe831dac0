#!/usr/bin/env bash
# Create or refresh the project's virtualenv in .venv with a Python 3.12+ interpreter.
# Usage: scripts/setup.sh [runtime|dev]   (dev adds test and lint tools)
# Falls back to Python 3.11 with Django 5.2 LTS when no 3.12+ interpreter exists.
set -euo pipefail
cd "$(dirname "$0")/.."
profile="${1:-runtime}"
requirements=requirements.txt
[ "$profile" = dev ] && requirements=requirements-dev.txt

version_ok() {  # $1 = interpreter, $2 = minimum minor version of Python 3
  "$1" -c "import sys; sys.exit(0 if sys.version_info >= (3, $2) else 1)" 2>/dev/null
}

find_python() {
  local candidates=("${PYTHON:-}" python3.14 python3.13 python3.12)
  candidates+=(/root/.pyenv/versions/3.1[2-9]*/bin/python3 "$HOME"/.pyenv/versions/3.1[2-9]*/bin/python3)
  candidates+=(/usr/local/bin/python3.1[2-9] /usr/bin/python3.1[2-9] python3)
  for candidate in "${candidates[@]}"; do
    [ -n "$candidate" ] || continue
    command -v "$candidate" >/dev/null 2>&1 || [ -x "$candidate" ] || continue
    if version_ok "$candidate" 12; then echo "$candidate"; return; fi
  done
  for candidate in python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 && version_ok "$candidate" 11; then
      echo "NOTICE: no Python 3.12+ found; using $candidate with Django 5.2 LTS." >&2
      echo "$candidate"; return
    fi
  done
  echo "ERROR: Research MCP needs Python 3.12+ (or 3.11 with Django 5.2 LTS); none found." >&2
  exit 1
}

if [ ! -x .venv/bin/python ] || ! version_ok .venv/bin/python 11; then
  python=$(find_python)
  rm -rf .venv
  "$python" -m venv .venv
fi

# Reinstall only when the requirement files change.
stamp=.venv/.installed-$profile
digest=$(cat requirements.txt "$requirements" pyproject.toml | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$digest" ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r "$requirements"
  # The project itself, editable, for the `research-mcp` console script.
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
  echo "$digest" > "$stamp"
fi
