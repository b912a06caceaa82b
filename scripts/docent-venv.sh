#!/usr/bin/env bash
# Docent (PyPI docent) in its own cached side venv, the judge of `depthlab export docent`:
# prints its Python interpreter's path (scripts/peer-venv.sh builds it once, with uv).
set -euo pipefail
exec bash "$(dirname "$0")/peer-venv.sh" docent "docent==${DEPTHLAB_DOCENT_VERSION:-0.1.88}"
