#!/usr/bin/env bash
# Installs the programs the tests drive, unless they are there: tmux (the terminal chat's test types into it and reads
# its screen) and Chromium (the Temporal UI and web view tests open pages in it, headless). Both come from Debian's
# packages, installed as root or through passwordless sudo; where neither is possible it says so in one line per
# program and the tests that need it fail naming it.
#
#   bash scripts/install-test-tools.sh [--quiet]
set -uo pipefail

quiet=${1:-}
say() { [ "$quiet" = "--quiet" ] || echo "install-test-tools: $*"; }

chromium_path() {
  if [ -n "${CHROMIUM_PATH:-}" ]; then echo "$CHROMIUM_PATH"; return; fi
  for candidate in /usr/bin/chromium "$(command -v chromium || true)" "$(command -v chromium-browser || true)"; do
    if [ -n "$candidate" ] && [ -x "$candidate" ]; then echo "$candidate"; return; fi
  done
  echo /usr/bin/chromium
}
have() {
  case "$1" in
    tmux) command -v tmux >/dev/null 2>&1 ;;
    chromium) [ -x "$(chromium_path)" ] ;;
  esac
}
as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo -n "$@"
  else return 1; fi
}
apt_install() {
  command -v apt-get >/dev/null 2>&1 || return 1
  as_root apt-get install -y -qq "$@" >/dev/null 2>&1 ||
    { as_root apt-get update -qq >/dev/null 2>&1 && as_root apt-get install -y -qq "$@" >/dev/null 2>&1; }
}

for program in tmux chromium; do
  if have "$program"; then say "$program: present"; continue; fi
  echo "install-test-tools: installing $program from Debian's packages …"
  if apt_install "$program" && have "$program"; then
    say "$program: installed"
  else
    echo "install-test-tools: $program is missing and could not be installed here (needs root, passwordless sudo and apt-get): install Debian's package $program, or set CHROMIUM_PATH to a Chromium; the tests that drive it fail until then" >&2
  fi
done
exit 0
