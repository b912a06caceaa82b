#!/usr/bin/env bash
# Make `docker compose` (Compose v2, the CLI plugin) available: Harbor's docker environment
# runs every trial through it, and Debian 12 ships only docker-compose 1.29 (a different program).
#
# Debian 13 (trixie)'s `docker-compose` package holds the v2 plugin as a static Go binary that
# runs on Debian 12. We fetch that one .deb with apt-get, using a trixie source written to a
# private folder (-o Dir::Etc::SourceList, -o Dir::State::Lists, -o Dir::Cache: the system's own
# sources, lists and caches are left untouched), unpack it with dpkg-deb -x and copy
# usr/libexec/docker/cli-plugins/docker-compose to /usr/local/lib/docker/cli-plugins/, where the
# docker CLI looks for plugins. Idempotent: nothing is done when `docker compose version` works.
#
# `compose-up.sh --fetch-to DIR` only fetches the plugin into DIR (no install, no root needed
# beyond what apt-get download needs): the tests use it to check the fetch itself.
#
# Without root or apt this is best effort unless DEPTHLAB_REQUIRE_DOCKER=1, where failing is an error.
set -u
required="${DEPTHLAB_REQUIRE_DOCKER:-0}"
fail() { echo "compose-up: $*" >&2; if [ "$required" = 1 ]; then exit 1; else echo "compose-up: Harbor's docker tests will be skipped" >&2; exit 0; fi; }

plugin_dir=/usr/local/lib/docker/cli-plugins
fetch_to=""
if [ "${1:-}" = "--fetch-to" ]; then
  fetch_to="${2:?--fetch-to needs a folder}"
  required=1
else
  if docker compose version >/dev/null 2>&1; then exit 0; fi
  command -v docker >/dev/null 2>&1 || fail "the docker CLI is missing (run scripts/docker-up.sh first)"
  [ "$(id -u)" = 0 ] || fail "docker compose v2 is missing and we are not root (to install it in $plugin_dir)"
fi
command -v apt-get >/dev/null 2>&1 || fail "docker compose v2 is missing and apt-get is not available"

mirror="${DEPTHLAB_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/sources.list.d"
echo "deb $mirror trixie main" > "$work/sources.list"
apt_private=(
  -o "Dir::Etc::SourceList=$work/sources.list"
  -o "Dir::Etc::SourceParts=$work/sources.list.d"
  -o "Dir::State::Lists=$work/lists"
  -o "Dir::Cache=$work/cache"
  -o "APT::Architecture=$(dpkg --print-architecture)"
  -o "APT::Sandbox::User=root"  # the private folders belong to root, not to _apt
)
echo "compose-up: fetching docker compose v2 from Debian 13 (trixie)'s docker-compose package" >&2
apt-get -qq "${apt_private[@]}" update >&2 || fail "apt-get update of the private trixie source failed"
(cd "$work" && apt-get -qq "${apt_private[@]}" download docker-compose >&2) \
  || fail "apt-get download docker-compose (trixie) failed"
deb=$(ls "$work"/docker-compose_*.deb 2>/dev/null | head -n 1)
[ -n "$deb" ] || fail "no docker-compose .deb was downloaded"
dpkg-deb -x "$deb" "$work/root" || fail "dpkg-deb -x $deb failed"
binary="$work/root/usr/libexec/docker/cli-plugins/docker-compose"
[ -x "$binary" ] || fail "$deb holds no usr/libexec/docker/cli-plugins/docker-compose"
if [ -n "$fetch_to" ]; then
  mkdir -p "$fetch_to" && install -m 0755 "$binary" "$fetch_to/docker-compose" || fail "could not write $fetch_to"
  exit 0
fi
mkdir -p "$plugin_dir"
install -m 0755 "$binary" "$plugin_dir/docker-compose.new" && mv -f "$plugin_dir/docker-compose.new" "$plugin_dir/docker-compose" \
  || fail "could not install the plugin into $plugin_dir"
docker compose version >&2 || fail "docker compose version fails after installing $plugin_dir/docker-compose"
