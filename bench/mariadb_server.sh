#!/usr/bin/env bash
# A throwaway MariaDB server for the benchmarks, with settings chosen to match pg_server.sh's
# PostgreSQL (the same buffer cache, every commit flushed to disk, the same connection limit):
#
#   mariadb_server.sh start DATADIR PORT    mariadb-install-db (when DATADIR is empty), start;
#                                           prints the URL
#   mariadb_server.sh stop DATADIR          clean shutdown: SIGTERM to the pid in its pid file,
#                                           then wait until the process is gone
#   mariadb_server.sh destroy DATADIR       stop and remove DATADIR and its files
#
# Settings, written to DATADIR.cnf (the server reads no other option file):
#   bind-address 127.0.0.1, unix socket DATADIR/mariadbd.sock, max_connections 200 (as PostgreSQL);
#   innodb_buffer_pool_size 1G (shared_buffers 1GB); innodb_flush_log_at_trx_commit 1 (every
#   commit written and flushed: synchronous_commit on with fsync on); innodb_doublewrite on
#   (full_page_writes on); innodb_log_file_size 1G (max_wal_size 1GB: the redo kept between
#   checkpoints); binary log off (MariaDB's default; PostgreSQL's WAL needs no second log for
#   replication, MariaDB's binlog would add a second flush to every commit);
#   max_allowed_packet 64M; character-set-server utf8mb4; skip-name-resolve. Everything else is
#   the MariaDB 10.11 default (innodb_flush_method O_DIRECT, performance_schema off, global
#   isolation REPEATABLE READ: both subjects set READ COMMITTED in their sessions).
# User `bench` without a password, all privileges (readpast's migration creates stored
# routines; the benchmark reads InnoDB's status); database `bench`.
# As root, the server runs as the `mysql` user (mariadbd refuses root without --user).
# MARIADB_OS_USER overrides `mysql`; MARIADBD overrides /usr/sbin/mariadbd.
set -euo pipefail

cmd=${1:-}
DATADIR=${2:-}
PORT=${3:-23306}
MARIADBD=${MARIADBD:-/usr/sbin/mariadbd}
OS_USER=${MARIADB_OS_USER:-mysql}
[[ -n $cmd && -n $DATADIR ]] || { sed -n '2,24p' "$0" >&2; exit 2; }
DATADIR=$(realpath -m "$DATADIR")
CNF="$DATADIR.cnf"
LOGFILE="$DATADIR.log"
SOCKET="$DATADIR/mariadbd.sock"
PIDFILE="$DATADIR/mariadbd.pid"

as_server_user() {
  if [[ $(id -u) -eq 0 ]]; then (cd / && runuser -u "$OS_USER" -- "$@"); else "$@"; fi
}

client() {
  mariadb --no-defaults --socket="$SOCKET" -uroot --batch --skip-column-names "$@"
}

start() {
  if [[ ! -f $CNF ]]; then
    cat >"$CNF" <<CONF
# readpast bench settings (bench/mariadb_server.sh)
[mariadbd]
datadir = $DATADIR
socket = $SOCKET
pid-file = $PIDFILE
log-error = $LOGFILE
port = $PORT
bind-address = 127.0.0.1
skip-name-resolve
skip-log-bin
max_connections = 200
max_allowed_packet = 64M
character-set-server = utf8mb4
collation-server = utf8mb4_general_ci
innodb_buffer_pool_size = 1G
innodb_log_file_size = 1G
innodb_flush_log_at_trx_commit = 1
innodb_doublewrite = 1
CONF
    chmod 644 "$CNF"  # mariadbd ignores a world-writable option file
  fi
  if [[ ! -d $DATADIR/mysql ]]; then
    mkdir -p "$DATADIR"
    chmod 700 "$DATADIR"
    if [[ $(id -u) -eq 0 ]]; then chown "$OS_USER": "$DATADIR"; fi
    as_server_user mariadb-install-db --defaults-file="$CNF" \
      --auth-root-authentication-method=normal --skip-test-db >"$DATADIR.install.log" 2>&1 ||
      { cat "$DATADIR.install.log" >&2; exit 1; }
  fi
  if [[ $(id -u) -eq 0 ]]; then touch "$LOGFILE"; chown "$OS_USER": "$LOGFILE"; fi
  # In the background, detached from this shell (its own session), as the server user.
  as_server_user setsid "$MARIADBD" --defaults-file="$CNF" </dev/null >>"$LOGFILE" 2>&1 &
  local launcher=$!
  for _ in $(seq 600); do
    if client -e "select 1" >/dev/null 2>&1; then break; fi
    if ! kill -0 "$launcher" 2>/dev/null && [[ ! -s $PIDFILE ]]; then
      echo "mariadbd did not start:" >&2; tail -n 30 "$LOGFILE" >&2; exit 1
    fi
    sleep 0.1
  done
  client -e "select 1" >/dev/null || { echo "mariadbd did not answer in 60 s" >&2; exit 1; }
  client -e "CREATE DATABASE IF NOT EXISTS bench;
             CREATE USER IF NOT EXISTS 'bench'@'127.0.0.1';
             CREATE USER IF NOT EXISTS 'bench'@'localhost';
             GRANT ALL PRIVILEGES ON *.* TO 'bench'@'127.0.0.1';
             GRANT ALL PRIVILEGES ON *.* TO 'bench'@'localhost';"
  echo "mariadb://bench@127.0.0.1:$PORT/bench"
}

stop() {
  [[ -s $PIDFILE ]] || return 0
  local pid
  pid=$(cat "$PIDFILE")
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 1200); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  echo "mariadbd ($pid) did not stop in 120 s" >&2
  exit 1
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  destroy) stop; rm -rf "$DATADIR" "$CNF" "$LOGFILE" "$DATADIR.install.log" ;;
  *) sed -n '2,24p' "$0" >&2; exit 2 ;;
esac
