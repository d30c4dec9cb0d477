#!/usr/bin/env bash
# Install nats-server 2.10 (Debian 13's package) on a Debian or Ubuntu machine whose own apt
# sources only offer an older one (Debian 12 ships 2.9.10, which one message from any credential
# can crash and which acknowledges writes before they reach disk; see docs/security.md).
# COTAL_NATS_SUITE names another Debian suite (the test suite fetches sid's, the newest supported
# server, with COTAL_NATS_MIN_MINOR=15: the least 2.x it accepts, 10 by default).
#
# The machine's apt sources are left alone: a private sources list, lists and cache in a temp
# dir fetch the one package by name, and only its binary is unpacked into DEST.
#
#   bash scripts/install-nats-server.sh [DEST]     # default DEST: ~/.local/share/cotal/bin
#
# Prints the installed binary's path on its last line. cotal finds it there by itself (it is one of
# the folders `cotal up` searches); elsewhere set NATS_SERVER_BIN to that path.
set -euo pipefail

DEST="${1:-${COTAL_NATS_DIR:-$HOME/.local/share/cotal/bin}}"
SUITE="${COTAL_NATS_SUITE:-trixie}"
WANT_MINOR="${COTAL_NATS_MIN_MINOR:-10}"
case "$WANT_MINOR" in '' | *[!0-9]*) echo "install-nats-server: COTAL_NATS_MIN_MINOR must be a number (the least 2.x accepted), not '$WANT_MINOR'" >&2; exit 2 ;; esac

have_ok() {
  local v
  v="$("$1" --version 2>/dev/null | sed -n 's/.*v\([0-9]*\)\.\([0-9]*\)\..*/\1 \2/p')" || return 1
  [ -n "$v" ] || return 1
  set -- $v
  [ "$1" -gt 2 ] || { [ "$1" -eq 2 ] && [ "$2" -ge "$WANT_MINOR" ]; }
}

if [ -x "$DEST/nats-server" ] && have_ok "$DEST/nats-server"; then
  echo "nats-server already installed: $("$DEST/nats-server" --version)" >&2
  echo "$DEST/nats-server"
  exit 0
fi

command -v apt-get >/dev/null 2>&1 || {
  echo "install-nats-server: apt-get not found. Install nats-server >= 2.$WANT_MINOR another way (Homebrew: brew install nats-server; the official image nats:2.$WANT_MINOR; or a release binary) and set NATS_SERVER_BIN." >&2
  exit 2
}

# The machine's own Debian mirror (deb822 or one-line sources); fall back to the main mirror name.
URI=""
if [ -r /etc/apt/sources.list.d/debian.sources ]; then
  URI="$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources)"
fi
if [ -z "$URI" ] && [ -r /etc/apt/sources.list ]; then
  URI="$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list)"
fi
URI="${URI:-http://deb.debian.org/debian}"

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP/lists/partial" "$TMP/cache/archives/partial"
echo "deb $URI $SUITE main" >"$TMP/sources.list"
APT=(apt-get -qq -o "Dir::Etc::sourcelist=$TMP/sources.list" -o "Dir::Etc::sourceparts=-"
  -o "Dir::State::Lists=$TMP/lists" -o "Dir::Cache=$TMP/cache" -o "APT::Sandbox::User=root")
echo "install-nats-server: fetching nats-server from $URI $SUITE (private apt list; the machine's sources are untouched)" >&2
"${APT[@]}" update
(cd "$TMP" && "${APT[@]}" download nats-server)
DEB="$(ls "$TMP"/nats-server_*.deb | head -n1)"
dpkg-deb -x "$DEB" "$TMP/root"
# Checked before it is installed: a package older than asked for leaves DEST as it was.
have_ok "$TMP/root/usr/sbin/nats-server" || {
  echo "install-nats-server: $DEB gave $("$TMP/root/usr/sbin/nats-server" --version 2>&1), not >= 2.$WANT_MINOR" >&2
  exit 1
}
mkdir -p "$DEST"
install -m 0755 "$TMP/root/usr/sbin/nats-server" "$DEST/nats-server"
echo "installed $("$DEST/nats-server" --version) at $DEST/nats-server" >&2
echo "$DEST/nats-server"
