#!/usr/bin/env bash
# A real Debian 12 userland as a Docker image, for the runner's and Harbor's real-task tests:
# mmdebstrap (Debian's package) builds a minbase root filesystem from Debian's packages, and
# `docker import` turns it into an image. Its tag carries a checksum of the package list, so a
# changed list builds a new image and an unchanged one is built once per Docker engine.
#
# Prints the image name on stdout. Containers made from it reach Debian's package registry
# (the one network this machine has), so a verifier that installs its tool with apt-get at
# verification time stands in faithfully for Terminal-Bench 2's test.sh.
#
# Without root, apt or Docker this is best effort unless DEPTHLAB_REQUIRE_DOCKER=1.
set -u
required="${DEPTHLAB_REQUIRE_DOCKER:-0}"
fail() { echo "userland-up: $*" >&2; if [ "$required" = 1 ]; then exit 1; else exit 0; fi; }

suite=bookworm
packages="tmux,python3,curl,ca-certificates,procps"
sum=$(printf '%s %s' "$suite" "$packages" | sha256sum | cut -c1-12)
image="depthlab-userland:${suite}-${sum}"

docker info >/dev/null 2>&1 || fail "no Docker engine answers (run scripts/docker-up.sh first)"
if docker image inspect "$image" >/dev/null 2>&1; then echo "$image"; exit 0; fi

if ! command -v mmdebstrap >/dev/null 2>&1; then
  [ "$(id -u)" = 0 ] || fail "mmdebstrap is not installed and we are not root"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap >/dev/null) \
    || fail "apt-get install mmdebstrap failed"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "userland-up: building $image with mmdebstrap (about 2 minutes, once)" >&2
mmdebstrap --quiet --variant=minbase --include="$packages" "$suite" "$work/rootfs.tar" >&2 \
  || fail "mmdebstrap failed"
docker import --change 'CMD ["/bin/bash"]' --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  "$work/rootfs.tar" "$image" >/dev/null || fail "docker import failed"
echo "$image"
