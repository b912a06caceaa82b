#!/usr/bin/env bash
# Make Rscript available for the statistics tests that compare against tests/r/ppcor_reference.R:
# install Debian's r-base-core when missing (as root, with apt-get). Only base R is needed (the
# script writes ppcor's formulas itself). Best effort unless DEPTHLAB_REQUIRE_R=1 (CI), where
# failing is an error; without R the tests skip with a reason.
set -u
required="${DEPTHLAB_REQUIRE_R:-0}"
fail() { echo "r-up: $*" >&2; if [ "$required" = 1 ]; then exit 1; else echo "r-up: the R reference tests will be skipped" >&2; exit 0; fi; }

if command -v Rscript >/dev/null 2>&1; then exit 0; fi
[ "$(id -u)" = 0 ] || fail "Rscript is not installed and we are not root"
command -v apt-get >/dev/null 2>&1 || fail "Rscript is not installed and apt-get is not available"
echo "r-up: installing r-base-core" >&2
export DEBIAN_FRONTEND=noninteractive
# apt-get update only when the package is unknown (a fresh image has no lists)
apt-cache show r-base-core >/dev/null 2>&1 || apt-get -o DPkg::Lock::Timeout=900 update -qq || fail "apt-get update failed"
apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends r-base-core >/dev/null || fail "apt-get install r-base-core failed"
command -v Rscript >/dev/null 2>&1 || fail "r-base-core installed but Rscript is not on PATH"
