#!/usr/bin/env bash
# Make Debian's headless Chromium and its chromedriver available for the explorer's browser test
# (tests/browser): install the chromium and chromium-driver packages when missing (as root, from
# Debian; selenium is pointed at /usr/bin/chromedriver, so no browser is ever downloaded).
# Without root or apt this is best effort unless DEPTHLAB_REQUIRE_BROWSER=1, where failing is an error.
set -u
required="${DEPTHLAB_REQUIRE_BROWSER:-0}"
fail() { echo "browser-up: $*" >&2; if [ "$required" = 1 ]; then exit 1; else echo "browser-up: the browser test will be skipped" >&2; exit 0; fi; }

if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then exit 0; fi
[ "$(id -u)" = 0 ] || fail "chromium/chromium-driver are not installed and we are not root"
command -v apt-get >/dev/null 2>&1 || fail "chromium/chromium-driver are not installed and apt-get is not available"
echo "browser-up: installing chromium chromium-driver" >&2
(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  chromium chromium-driver >/dev/null) || fail "apt-get install chromium chromium-driver failed"
[ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ] || fail "chromium or chromedriver missing after the install"
