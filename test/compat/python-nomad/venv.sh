#!/usr/bin/env bash
# Prints the python of a virtualenv with python-nomad 2.1.0 (unmodified, from
# PyPI), cached under ~/.cache/chronomad/ (outside the repository), installing
# it the first time. Exits 1 with the reason on stderr when python3 or the
# package cannot be had. Used by test/compat/python-nomad/python-nomad.test.ts
# and .ci/run.
set -euo pipefail

PYTHON_NOMAD_VERSION=2.1.0

if ! command -v python3 >/dev/null 2>&1; then
  echo "python-nomad venv: python3 not found" >&2
  exit 1
fi

venv="${XDG_CACHE_HOME:-$HOME/.cache}/chronomad/python-nomad-$PYTHON_NOMAD_VERSION"
# The marker is written last, so a half-finished install is redone, not used.
if [ ! -f "$venv/.installed" ]; then
  echo "python-nomad venv: installing python-nomad $PYTHON_NOMAD_VERSION into $venv" >&2
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv" >&2 || { echo "python-nomad venv: python3 -m venv failed" >&2; exit 1; }
  "$venv/bin/pip" install --quiet --disable-pip-version-check "python-nomad==$PYTHON_NOMAD_VERSION" >&2 ||
    { echo "python-nomad venv: pip install python-nomad==$PYTHON_NOMAD_VERSION failed" >&2; exit 1; }
  touch "$venv/.installed"
fi
echo "$venv/bin/python"
