#!/usr/bin/env bash
# Make a Docker Engine available for the runner's tests: install docker.io when missing
# (as root, from Debian), start dockerd in the background, wait for its socket.
# Without root or apt this is best effort unless DEPTHLAB_REQUIRE_DOCKER=1, where failing is an error.
set -u
required="${DEPTHLAB_REQUIRE_DOCKER:-0}"
fail() { echo "docker-up: $*" >&2; if [ "$required" = 1 ]; then exit 1; else echo "docker-up: Docker tests will be skipped" >&2; exit 0; fi; }

if docker info >/dev/null 2>&1; then exit 0; fi
if ! command -v dockerd >/dev/null 2>&1; then
  [ "$(id -u)" = 0 ] || fail "dockerd is not installed and we are not root"
  command -v apt-get >/dev/null 2>&1 || fail "dockerd is not installed and apt-get is not available"
  echo "docker-up: installing docker.io" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io busybox-static >/dev/null) \
    || fail "apt-get install docker.io failed"
fi
if ! [ -x /bin/busybox ] && [ "$(id -u)" = 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq busybox-static >/dev/null 2>&1 || true
fi
if ! [ -S /var/run/docker.sock ] || ! docker info >/dev/null 2>&1; then
  [ "$(id -u)" = 0 ] || fail "dockerd is not running and we are not root"
  nohup dockerd >/tmp/dockerd.log 2>&1 &
fi
for _ in $(seq 1 60); do
  docker info >/dev/null 2>&1 && exit 0
  sleep 1
done
fail "dockerd did not answer within 60 s (see /tmp/dockerd.log)"
