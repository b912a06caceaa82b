#!/usr/bin/env bash
# Build (once) the side virtual environment of one export peer (a package depthlab writes a format for
# but never imports) and print its Python interpreter's path on stdout:
#     bash scripts/peer-venv.sh NAME REQUIREMENT
# e.g. `bash scripts/peer-venv.sh scout inspect-scout==0.6.2` (scripts/scout-venv.sh, scripts/docent-venv.sh).
#
# The peers pull in heavy trees (inspect-ai, openai, anthropic, OpenTelemetry...) that pip may resolve
# for many minutes; `uv pip` resolves them in seconds, so the venv is built with uv, itself installed
# once into its own small venv beside it. Each peer has its own venv (they install badly together),
# cached in the user cache and keyed on the requirement and the Python version:
#     ${XDG_CACHE_HOME:-~/.cache}/depthlab/<NAME>-<VERSION>-py<X.Y>
# The interpreter is $DEPTHLAB_PEER_PYTHON, else python3.12 / python3.13 on PATH, else one that pyenv
# has installed. Exit status 3 (and a reason on stderr) when none exists.
set -euo pipefail

name="$1"
requirement="$2"

# shellcheck source=python312.sh
. "$(dirname "$0")/python312.sh"

if ! python="$(find_python DEPTHLAB_PEER_PYTHON)"; then
    echo "$name-venv: no Python 3.12 or 3.13 interpreter (python3.12 on PATH, pyenv, or DEPTHLAB_PEER_PYTHON)" >&2
    exit 3
fi
py_version="$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/depthlab"
venv="$cache/$name-${requirement##*==}-py${py_version}"
uv_venv="$cache/uv-py${py_version}"

mkdir -p "$cache"
exec 9>"$venv.lock"
flock 9  # two test workers asking at once: one builds, the other waits
if [ ! -f "$venv/.installed" ]; then
    (
        flock 8  # the uv venv is shared by the peers' builds
        if [ ! -x "$uv_venv/bin/uv" ]; then
            echo "$name-venv: installing uv into $uv_venv" >&2
            rm -rf "$uv_venv"
            "$python" -m venv "$uv_venv"
            "$uv_venv/bin/python" -m pip install -q uv >&2
        fi
    ) 8>"$uv_venv.lock"
    echo "$name-venv: building $venv with $python ($requirement)" >&2
    rm -rf "$venv"
    "$uv_venv/bin/uv" venv -q --python "$python" "$venv" >&2
    "$uv_venv/bin/uv" pip install -q --python "$venv/bin/python" "$requirement" >&2
    touch "$venv/.installed"
fi
echo "$venv/bin/python"
