# Sourced (not run) by the side venvs' scripts (harbor-venv.sh, peer-venv.sh): `find_python VAR` prints
# a Python >= 3.12 that runs: $VAR's value if set, else python3.12 / python3.13 on PATH, else one that
# pyenv has installed; exit status 1 when none exists.

usable() {  # a Python >= 3.12 that runs (a pyenv shim of another version does not)
    "$1" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1
}

find_python() {
    local candidate version
    for candidate in "${!1:-}" python3.12 python3.13; do
        [ -n "$candidate" ] && usable "$candidate" && { command -v "$candidate"; return 0; }
    done
    if command -v pyenv >/dev/null 2>&1; then
        for version in $(pyenv versions --bare 2>/dev/null | grep -E '^3\.1[23]\.[0-9]+$' | sort -V); do
            candidate="$(pyenv prefix "$version" 2>/dev/null)/bin/python"
            usable "$candidate" && { echo "$candidate"; return 0; }
        done
    fi
    return 1
}
