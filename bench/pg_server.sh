#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the benchmarks, with exactly the settings of the peer
# harness' pg.sh (shared/peers/pg.sh), so that readpast's numbers and the peers' compare:
#
#   pg_server.sh start DATADIR PORT    initdb (when DATADIR is empty), configure, start;
#                                      prints the URL
#   pg_server.sh stop DATADIR          fast shutdown (pg_ctl, i.e. by the pid in postmaster.pid)
#   pg_server.sh destroy DATADIR       stop and remove DATADIR
#
# Settings written to postgresql.conf (everything else is the PostgreSQL 15 default: fsync on,
# full_page_writes on, wal_level replica, max_wal_size 1GB, autovacuum on):
#   listen_addresses '127.0.0.1', unix socket in DATADIR, max_connections 200,
#   shared_buffers 1GB, synchronous_commit on; trust authentication; database "bench".
# As root, the server runs as the `postgres` user (PostgreSQL refuses root).
# PG_BIN overrides /usr/lib/postgresql/15/bin.
set -euo pipefail

cmd=${1:-}
DATADIR=${2:-}
PORT=${3:-55433}
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
PG_OS_USER=${PG_OS_USER:-postgres}
[[ -n $cmd && -n $DATADIR ]] || { sed -n '2,16p' "$0" >&2; exit 2; }
LOGFILE="$DATADIR.log"

as_pg() {
  if [[ $(id -u) -eq 0 ]]; then (cd / && runuser -u "$PG_OS_USER" -- "$@"); else "$@"; fi
}

start() {
  if [[ ! -s "$DATADIR/PG_VERSION" ]]; then
    mkdir -p "$DATADIR"
    chmod 700 "$DATADIR"
    if [[ $(id -u) -eq 0 ]]; then chown "$PG_OS_USER": "$DATADIR"; fi
    as_pg "$PG_BIN/initdb" -D "$DATADIR" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 \
      --no-instructions >/dev/null
    cat >>"$DATADIR/postgresql.conf" <<CONF

# ---- readpast bench settings (the same as the peer harness' pg.sh) ----
listen_addresses = '127.0.0.1'
port = $PORT
unix_socket_directories = '$DATADIR'
max_connections = 200
shared_buffers = 1GB
synchronous_commit = on
logging_collector = off
log_min_messages = warning
log_autovacuum_min_duration = 0
log_checkpoints = on
CONF
  fi
  if [[ $(id -u) -eq 0 ]]; then touch "$LOGFILE"; chown "$PG_OS_USER": "$LOGFILE"; fi
  as_pg "$PG_BIN/pg_ctl" -D "$DATADIR" -l "$LOGFILE" -w -t 60 start >/dev/null
  local psql=("$PG_BIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -X -q -v ON_ERROR_STOP=1)
  if [[ -z $("${psql[@]}" -d postgres -Atc "select 1 from pg_database where datname='bench'") ]]; then
    "${psql[@]}" -d postgres -c "create database bench"
  fi
  echo "postgresql://postgres@127.0.0.1:$PORT/bench"
}

stop() {
  if [[ -f "$DATADIR/postmaster.pid" ]]; then
    as_pg "$PG_BIN/pg_ctl" -D "$DATADIR" -m fast -w -t 60 stop >/dev/null
  fi
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  destroy) stop; rm -rf "$DATADIR" "$LOGFILE" ;;
  *) sed -n '2,16p' "$0" >&2; exit 2 ;;
esac
