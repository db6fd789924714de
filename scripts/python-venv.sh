#!/usr/bin/env bash
# Usage: scripts/python-venv.sh NAME PACKAGE==VERSION...
# Prints the python of a virtualenv holding the pinned PACKAGEs from PyPI,
# cached under ~/.cache/chronomad/NAME (outside the repository), installing
# them the first time. Exits 1 with the reason on stderr when python3 or a
# package cannot be had. The test suites that run Python (python-nomad, the
# log decoder) and .ci/run get their interpreters here.
set -euo pipefail

name="$1"
shift

if ! command -v python3 >/dev/null 2>&1; then
  echo "$name venv: python3 not found" >&2
  exit 1
fi

venv="${XDG_CACHE_HOME:-$HOME/.cache}/chronomad/$name"
# The marker is written last, so a half-finished install is redone, not used.
if [ ! -f "$venv/.installed" ]; then
  echo "$name venv: installing $* into $venv" >&2
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv" >&2 || { echo "$name venv: python3 -m venv failed" >&2; exit 1; }
  "$venv/bin/pip" install --quiet --disable-pip-version-check "$@" >&2 ||
    { echo "$name venv: pip install $* failed" >&2; exit 1; }
  touch "$venv/.installed"
fi
echo "$venv/bin/python"
