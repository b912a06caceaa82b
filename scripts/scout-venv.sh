#!/usr/bin/env bash
# Inspect Scout (PyPI inspect-scout) in its own cached side venv, the judge of `depthlab export scout`:
# prints its Python interpreter's path (scripts/peer-venv.sh builds it once, with uv).
set -euo pipefail
exec bash "$(dirname "$0")/peer-venv.sh" scout "inspect-scout==${DEPTHLAB_SCOUT_VERSION:-0.6.1}"
