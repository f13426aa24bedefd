#!/usr/bin/env bash
# The job list and search of `readpast serve` at 10M jobs (issue 22): fill a database with N
# jobs shaped like a busy system's, then time GET /api/jobs requests against it.
#
#   lists_10m.sh fill-sqlite FILE N        a new SQLite database FILE with N jobs
#   lists_10m.sh fill-postgres URL N       N jobs into a fresh PostgreSQL database at URL
#   lists_10m.sh measure URL [REPEAT]      starts `readpast serve` on URL, times each request
#                                          REPEAT times (default 20), prints median and max,
#                                          then follows a search that finds nothing through
#                                          the whole table ("next" until null), once
#
# The N jobs: ids 1..N over four queues q0..q3 (by id modulo 4); ~110-byte JSON payloads as
# the other benchmarks write them (bench/common.cpp, payload()); every 1000th job dead with an
# error text, every 1000th (+1) available, retrying and scheduled an hour ahead, every
# 100000th (+2) running with a lease that has expired, the newest 100,000 available, the rest
# succeeded. READPAST (default build/src/cli/readpast) and PORT (default 18931) may be set.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
READPAST=${READPAST:-$here/../build/src/cli/readpast}
PORT=${PORT:-18931}

cmd=${1:-}
case "$cmd" in
fill-sqlite)
  file=$2 n=$3
  rm -f "$file" "$file-wal" "$file-shm"
  "$READPAST" --db "sqlite:$file" init >/dev/null
  sqlite3 "$file" <<SQL
PRAGMA journal_mode = WAL;
PRAGMA synchronous = OFF;
PRAGMA cache_size = -1000000;
WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < $n),
     t(now) AS (SELECT CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER))
INSERT INTO readpast_jobs (queue, state, run_at, attempts, lease_token, leased_by,
                           lease_expires_at, enqueued_at, started_at, finished_at,
                           last_error, payload)
SELECT 'q' || (i % 4),
       CASE WHEN i > $n - 100000 OR i % 1000 = 1 THEN 'available'
            WHEN i % 1000 = 0 THEN 'dead'
            WHEN i % 100000 = 2 THEN 'running'
            ELSE 'succeeded' END,
       CASE WHEN i % 1000 = 1 AND i <= $n - 100000 THEN now + 3600000000
            ELSE now - ($n - i) * 1000 END,
       CASE WHEN i > $n - 100000 THEN 0 ELSE 1 END,
       CASE WHEN i % 100000 = 2 AND i <= $n - 100000 THEN lower(hex(randomblob(16))) END,
       CASE WHEN i <= $n - 100000 THEN 'host-' || (i % 7) || '/' || (1000 + i % 13) END,
       CASE WHEN i % 100000 = 2 AND i <= $n - 100000 THEN now - 60000000 END,
       now - ($n - i) * 1000,
       CASE WHEN i <= $n - 100000 THEN now - ($n - i) * 1000 + 500 END,
       CASE WHEN i <= $n - 100000 AND i % 1000 <> 1 AND i % 100000 <> 2
            THEN now - ($n - i) * 1000 + 900 END,
       CASE WHEN i % 1000 IN (0, 1) THEN 'exit status 1: smtp timeout talking to mx' || (i % 97) END,
       CAST('{"seq":' || i || ',"user_id":' || (100000 + i % 900000) ||
            ',"action":"send_welcome_email","email":"user' || (100000 + i % 900000) ||
            '@example.com","locale":"en-GB"}' AS BLOB)
FROM seq, t;
ANALYZE;
SQL
  ;;
fill-postgres)
  url=$2 n=$3
  "$READPAST" --db "$url" init >/dev/null
  psql -q -v ON_ERROR_STOP=1 "$url" <<SQL
SET synchronous_commit = off;
-- readpast.jobs is a view over live and done (migration 10): the rows go to the table of
-- their state, with id = i as one insert through the view would give them.
CREATE TEMP VIEW fill (id, queue, state, run_at, attempts, lease_token, leased_by,
                       lease_expires_at, enqueued_at, started_at, finished_at, last_error,
                       payload) AS
SELECT i, 'q' || (i % 4),
       CASE WHEN i > $n - 100000 OR i % 1000 = 1 THEN 'available'
            WHEN i % 1000 = 0 THEN 'dead'
            WHEN i % 100000 = 2 THEN 'running'
            ELSE 'succeeded' END,
       CASE WHEN i % 1000 = 1 AND i <= $n - 100000 THEN now() + interval '1 hour'
            ELSE now() - ($n - i) * interval '1 ms' END,
       CASE WHEN i > $n - 100000 THEN 0 ELSE 1 END,
       CASE WHEN i % 100000 = 2 AND i <= $n - 100000 THEN gen_random_uuid() END,
       CASE WHEN i <= $n - 100000 THEN 'host-' || (i % 7) || '/' || (1000 + i % 13) END,
       CASE WHEN i % 100000 = 2 AND i <= $n - 100000 THEN now() - interval '1 minute' END,
       now() - ($n - i) * interval '1 ms',
       CASE WHEN i <= $n - 100000 THEN now() - ($n - i) * interval '1 ms' END,
       CASE WHEN i <= $n - 100000 AND i % 1000 <> 1 AND i % 100000 <> 2
            THEN now() - ($n - i) * interval '1 ms' END,
       CASE WHEN i % 1000 IN (0, 1) THEN 'exit status 1: smtp timeout talking to mx' || (i % 97) END,
       convert_to('{"seq":' || i || ',"user_id":' || (100000 + i % 900000) ||
                  ',"action":"send_welcome_email","email":"user' || (100000 + i % 900000) ||
                  '@example.com","locale":"en-GB"}', 'UTF8')
FROM generate_series(1, $n) AS i;
INSERT INTO readpast.live (id, queue, state, run_at, attempts, lease_token, leased_by,
                           lease_expires_at, enqueued_at, started_at, finished_at,
                           last_error, payload) OVERRIDING SYSTEM VALUE
SELECT * FROM fill WHERE state = 'available';
INSERT INTO readpast.running (id, queue, state, run_at, attempts, lease_token, leased_by,
                              lease_expires_at, enqueued_at, started_at, finished_at,
                              last_error, payload)
SELECT * FROM fill WHERE state = 'running';
INSERT INTO readpast.done (id, queue, state, run_at, attempts, max_attempts, lease_token,
                           leased_by, lease_expires_at, enqueued_at, started_at, finished_at,
                           last_error, payload, priority)
SELECT id, queue, state, run_at, attempts, 25, lease_token, leased_by, lease_expires_at,
       enqueued_at, started_at, finished_at, last_error, payload, 100
FROM fill WHERE state IN ('succeeded', 'dead');
SELECT setval('readpast.jobs_id_seq', $n);
VACUUM ANALYZE readpast.live, readpast.running, readpast.done;
SQL
  ;;
measure)
  url=$2 repeat=${3:-20}
  "$READPAST" --db "$url" serve --listen "127.0.0.1:$PORT" >/dev/null 2>&1 &
  server=$!
  trap 'kill $server 2>/dev/null || true' EXIT
  for _ in $(seq 50); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.2; done
  # A cursor deep in the table, for "a page in the middle".
  mid=$(curl -sf "http://127.0.0.1:$PORT/api/jobs?limit=1" | python3 -c \
    'import json,sys; print(json.load(sys.stdin)["jobs"][0]["id"] // 2)')
  while read -r name path; do
    path=${path//MID/$mid}
    times=()
    for _ in $(seq "$repeat"); do
      times+=("$(curl -s -o /tmp/lists_10m.out -w '%{time_total}' "http://127.0.0.1:$PORT$path")")
    done
    count=$(python3 -c 'import json; d=json.load(open("/tmp/lists_10m.out")); print(len(d["jobs"]), d["next"])')
    printf '%s\n' "${times[@]}" | sort -n | awk -v name="$name" -v path="$path" -v count="$count" \
      '{a[NR]=$1} END {printf "%-28s median %7.1f ms  max %7.1f ms  (%s)  %s\n", name, a[int((NR+1)/2)]*1000, a[NR]*1000, count, path}'
  done <<'REQUESTS'
first-page-newest        /api/jobs?limit=50&payload_max=200
first-page-oldest        /api/jobs?limit=50&order=oldest&payload_max=200
middle-page-newest       /api/jobs?limit=50&before=MID&payload_max=200
prev-page-from-middle    /api/jobs?limit=50&after=MID&payload_max=200
queue-newest             /api/jobs?limit=50&queue=q1&payload_max=200
queue-dead-newest        /api/jobs?limit=50&queue=q1&state=dead&payload_max=200
dead-all-queues          /api/jobs?limit=50&state=dead&payload_max=200
view-scheduled           /api/jobs?limit=50&view=scheduled&payload_max=200
view-retrying-q1         /api/jobs?limit=50&view=retrying&queue=q1&payload_max=200
view-expired             /api/jobs?limit=50&view=expired&payload_max=200
search-hit               /api/jobs?limit=50&q=user100042&payload_max=200
search-nothing           /api/jobs?limit=50&q=no-such-text&payload_max=200
search-nothing-q1        /api/jobs?limit=50&q=no-such-text&queue=q1&payload_max=200
search-nothing-middle    /api/jobs?limit=50&q=no-such-text&before=MID&payload_max=200
REQUESTS
  python3 - "$PORT" <<'PY'
import json, sys, time, urllib.request
port = sys.argv[1]
path = "/api/jobs?limit=50&q=no-such-text"
cursor, requests, start = "", 0, time.monotonic()
while True:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}{cursor}") as r:
        page = json.load(r)
    requests += 1
    if page["next"] is None:
        break
    cursor = "&before=%d" % page["next"]["before"]
took = time.monotonic() - start
print(f"sweep: a search that finds nothing, through every id: {requests} requests, "
      f"{took:.1f} s, {took / requests * 1000:.1f} ms each")
PY
  ;;
*)
  sed -n '2,15p' "$0" >&2
  exit 2
  ;;
esac
