#!/usr/bin/env bash
# Makes sure this machine has a PostgreSQL server's binaries (initdb, pg_ctl,
# postgres): the tests and `rwc local` start their own clusters with them.
# Nothing is started here.
set -euo pipefail
have() {
  local bindir
  bindir=$(pg_config --bindir 2>/dev/null) || return 1
  [ -x "$bindir/initdb" ] && [ -x "$bindir/pg_ctl" ] && [ -x "$bindir/postgres" ]
}
if have; then exit 0; fi
for d in /usr/lib/postgresql/*/bin; do
  if [ -x "$d/initdb" ]; then exit 0; fi
done
echo "PostgreSQL server binaries not found; installing Debian's postgresql package" >&2
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq postgresql >/dev/null
# Debian's package starts a cluster of its own; rwc does not use it.
$SUDO pg_ctlcluster --force "$(ls /etc/postgresql | tail -1)" main stop 2>/dev/null || true
have || [ -x "$(ls -d /usr/lib/postgresql/*/bin | tail -1)/initdb" ]
