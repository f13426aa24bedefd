#!/usr/bin/env bash
# The index layouts tried before migration 3 (docs/benchmarks.md, runs 20 and 21): one server
# (bench/mariadb_server.sh), readpast's schema version 2 created by the first drain, then the
# indexes changed by hand between drains of 4 and 8 threads x leases of 10 and 100 (v2r and
# v5: leases of 100 only, three rounds). Single rounds; v5 ran while another build used the
# machine. Run from the repository's root, as root, with readpast_bench built.
set -euo pipefail
BENCH=${BENCH:-build-bench/bench/readpast_bench}
OUT=${OUT:-docs/bench-results/2026-11-25/run20/layouts}
DIR=$(mktemp -d /tmp/layouts-XXXXXX); chmod 755 "$DIR"
cleanup() { bench/mariadb_server.sh destroy "$DIR/data" >/dev/null 2>&1 || true; rm -rf "$DIR"; }
trap cleanup EXIT
URL=$(bench/mariadb_server.sh start "$DIR/data" 23320)
SQL=(mariadb --no-defaults -h 127.0.0.1 -P 23320 -u bench bench)
drain() {  # LABEL [BATCHES]
  "$BENCH" run --engine mariadb --mariadb-url "$URL" --suites drain --drain-shapes 1x4,1x8 \
    --drain-batches "${2:-10,100}" --drain-n-small 10000 --drain-n-large 50000 --out "$OUT/$1.jsonl"
}
drain v0   # version 2: lease, expiry, finished, queue_state, state, unique
"${SQL[@]}" -e "ALTER TABLE readpast_jobs DROP KEY readpast_jobs_expiry, DROP KEY readpast_jobs_state,
  DROP KEY readpast_jobs_queue_state, DROP KEY readpast_jobs_finished,
  ADD COLUMN finished_state VARCHAR(9) CHARACTER SET ascii COLLATE ascii_bin
    AS (IF(state IN ('succeeded','dead','cancelled'), state, NULL)) PERSISTENT,
  ADD KEY readpast_jobs_finished (queue, finished_state, finished_at),
  ADD KEY readpast_jobs_finished_queue_ids (queue, finished_state, id),
  ADD KEY readpast_jobs_finished_ids (finished_state, id)"
drain v1   # lease, three finished indexes, unique
"${SQL[@]}" -e "ALTER TABLE readpast_jobs DROP KEY readpast_jobs_finished_queue_ids, DROP KEY readpast_jobs_finished_ids"
drain v2   # lease, one finished index, unique
"${SQL[@]}" -e "ALTER TABLE readpast_jobs DROP KEY readpast_jobs_unique"
drain v3   # lease, one finished index
"${SQL[@]}" -e "ALTER TABLE readpast_jobs DROP KEY readpast_jobs_finished"
drain v4   # lease only
"${SQL[@]}" -e "ALTER TABLE readpast_jobs ADD UNIQUE KEY readpast_jobs_unique (queue, live_key),
  ADD KEY readpast_jobs_finished (queue, finished_state, finished_at)"
for _ in 1 2 3; do drain v2r 100; done   # v2 again, leases of 100, three rounds
"${SQL[@]}" -e "ALTER TABLE readpast_jobs ADD KEY readpast_jobs_finished_ids (finished_state, id)"
for _ in 1 2 3; do drain v5 100; done    # v2 plus (finished_state, id)
