#!/usr/bin/env bash
# Prints the python of a virtualenv with python-nomad 2.1.0 (unmodified, from
# PyPI), cached under ~/.cache/chronomad/ (outside the repository), installing
# it the first time. Exits 1 with the reason on stderr when python3 or the
# package cannot be had. Used by test/compat/python-nomad/python-nomad.test.ts
# and .ci/run.
set -euo pipefail
PYTHON_NOMAD_VERSION=2.1.0
exec bash "$(dirname "${BASH_SOURCE[0]}")/../../../scripts/python-venv.sh" \
  "python-nomad-$PYTHON_NOMAD_VERSION" "python-nomad==$PYTHON_NOMAD_VERSION"
