#!/usr/bin/env bash
# Make Harbor available as the judge of depthlab's Harbor files (tests marked `harbor`):
# headless Chromium and OCR to read its screenshots (Debian's chromium and tesseract-ocr, as
# root when missing) and the Harbor side venv
# (scripts/harbor-venv.sh; built once, cached in the user cache).
# Best effort unless DEPTHLAB_REQUIRE_HARBOR=1, where failing is an error.
set -u
required="${DEPTHLAB_REQUIRE_HARBOR:-0}"
here="$(cd "$(dirname "$0")" && pwd)"
fail() { echo "harbor-up: $*" >&2; if [ "$required" = 1 ]; then exit 1; else echo "harbor-up: Harbor tests will be skipped" >&2; exit 0; fi; }

if ! command -v chromium >/dev/null 2>&1 || ! command -v tesseract >/dev/null 2>&1; then
  [ "$(id -u)" = 0 ] || fail "chromium or tesseract is not installed and we are not root"
  command -v apt-get >/dev/null 2>&1 || fail "chromium or tesseract is not installed and apt-get is not available"
  echo "harbor-up: installing chromium and tesseract-ocr" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium tesseract-ocr >/dev/null) \
    || fail "apt-get install chromium tesseract-ocr failed"
fi
started=$(date +%s)
bash "$here/harbor-venv.sh" >/dev/null || fail "the Harbor side venv could not be built (see above)"
echo "harbor-up: Harbor side venv ready ($(( $(date +%s) - started )) s)" >&2
