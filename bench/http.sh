#!/usr/bin/env bash
# `readpast serve` under load: requests per second and latency percentiles of its HTTP layer,
# with ApacheBench (Debian's apache2-utils) on loopback, for one or more readpast binaries in
# the same run (before and after a change to src/server/). Each binary gets a fresh SQLite
# database and a server with a token; three request kinds, each BENCH_HTTP_REPEAT times:
#   healthz    GET /healthz, keep-alive, 32 clients: the HTTP layer and one clock query
#   queues     GET /api/queues, keep-alive, 32 clients: a read route (stats of a 10k-job queue)
#   enqueue    POST /api/queues/q/jobs, keep-alive, 8 clients: a write route
#   handshake  GET /healthz, a new connection per request, 32 clients: accept and close
#
#   bench/http.sh NAME=PATH/TO/readpast [NAME=PATH ...]
#
# Prints one line per binary, kind and run: name kind requests/s p50_ms p99_ms failed, where
# failed counts connect, receive and other errors and non-2xx answers (not ab's "Length"
# failures: /api/queues answers with rates whose length varies).
# Environment: BENCH_HTTP_REPEAT [3], BENCH_HTTP_REQUESTS [50000], BENCH_HTTP_PORT [18431]
# (each binary gets the next port: a server's closed connections linger in TIME_WAIT).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: bench/http.sh NAME=READPAST [NAME=READPAST ...]" >&2; exit 2; }
command -v ab >/dev/null || { echo "bench/http.sh: needs ab (apt-get install apache2-utils)" >&2; exit 1; }
REPEAT=${BENCH_HTTP_REPEAT:-3}
REQUESTS=${BENCH_HTTP_REQUESTS:-50000}
PORT=${BENCH_HTTP_PORT:-18431}
TOKEN=bench-http-token-0123456789
scratch=$(mktemp -d "${TMPDIR:-/tmp}/readpast-http-bench-XXXXXX")
server=""
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; wait 2>/dev/null; rm -rf "$scratch"; }
trap cleanup EXIT
printf '{"payload": {"to": "a@example.com"}}' >"$scratch/job.json"

# run_ab NAME KIND ARGS...: one ab run, summarised.
run_ab() {
  local name=$1 kind=$2
  shift 2
  local out
  out=$(ab -q -H "Authorization: Bearer $TOKEN" "$@" 2>&1) || { echo "$name $kind ab failed: $out" >&2; return; }
  local rps p50 p99 failed
  rps=$(awk '/^Requests per second/ {print $4}' <<<"$out")
  p50=$(awk '$1 == "50%" {print $2}' <<<"$out")
  p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
  # "   (Connect: 0, Receive: 0, Length: 12, Exceptions: 0)"
  failed=$(awk -F'[:,)]' '/\(Connect:/ {print $2 + $4 + $8}' <<<"$out")
  non2xx=$(awk '/^Non-2xx responses/ {print $3}' <<<"$out")
  echo "$name $kind $rps $p50 $p99 $((${failed:-0} + ${non2xx:-0}))"
}

echo "name kind requests_per_s p50_ms p99_ms failed"
for spec in "$@"; do
  name=${spec%%=*} bin=${spec#*=}
  PORT=$((PORT + 1))
  db="sqlite:$scratch/$name.db"
  "$bin" --db "$db" init >/dev/null
  seq 1 10000 | "$bin" --db "$db" enqueue q --lines >/dev/null
  READPAST_TOKEN=$TOKEN "$bin" --db "$db" serve --listen "127.0.0.1:$PORT" 2>"$scratch/$name.log" &
  server=$!
  for _ in $(seq 1 100); do
    curl -fs -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/healthz" >/dev/null && break
    sleep 0.1
  done
  url=http://127.0.0.1:$PORT
  for _ in $(seq 1 "$REPEAT"); do
    run_ab "$name" healthz -k -c 32 -n "$REQUESTS" "$url/healthz"
    run_ab "$name" queues -k -c 32 -n $((REQUESTS / 10)) "$url/api/queues"
    run_ab "$name" enqueue -k -c 8 -n $((REQUESTS / 5)) -p "$scratch/job.json" -T application/json "$url/api/queues/q/jobs"
    run_ab "$name" handshake -c 32 -n $((REQUESTS / 5)) "$url/healthz"
  done
  kill "$server"
  wait "$server" 2>/dev/null || true
  server=""
done
