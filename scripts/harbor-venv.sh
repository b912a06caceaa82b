#!/usr/bin/env bash
# Build (once) the side virtual environment holding Harbor, the judge of depthlab's Harbor files,
# and print its Python interpreter's path on stdout.
#
# Harbor needs Python >= 3.12 and depthlab's own venv may be older, so Harbor lives in its own
# venv, cached in the user cache and keyed on the pinned Harbor version and the Python version:
#     ${XDG_CACHE_HOME:-~/.cache}/depthlab/harbor-<HARBOR_VERSION>-py<X.Y>
# The interpreter is $DEPTHLAB_HARBOR_PYTHON, else python3.12 / python3.13 on PATH, else one
# that pyenv has installed. Exit status 3 (and a reason on stderr) when none exists.
set -euo pipefail

HARBOR_VERSION="${DEPTHLAB_HARBOR_VERSION:-0.26.0}"

# shellcheck source=python312.sh
. "$(dirname "$0")/python312.sh"

if ! python="$(find_python DEPTHLAB_HARBOR_PYTHON)"; then
    echo "harbor-venv: no Python 3.12 or 3.13 interpreter (python3.12 on PATH, pyenv, or DEPTHLAB_HARBOR_PYTHON)" >&2
    exit 3
fi
py_version="$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
venv="${XDG_CACHE_HOME:-$HOME/.cache}/depthlab/harbor-${HARBOR_VERSION}-py${py_version}"

mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9  # two test workers asking at once: one builds, the other waits
if [ ! -f "$venv/.installed" ]; then
    echo "harbor-venv: building $venv with $python (harbor==$HARBOR_VERSION)" >&2
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install -q "harbor==$HARBOR_VERSION" >&2
    touch "$venv/.installed"
fi
echo "$venv/bin/python"
