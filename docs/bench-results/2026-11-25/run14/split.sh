#!/bin/bash
# Run 14 (docs/benchmarks.md): the enqueue suite on a fresh readpast schema with the insert
# trigger, the five CHECKs, or both dropped, alternating. Run from the repository's root
# with a Release build in build-bench (this run: c0e814b) and
#   URL=$(bench/pg_server.sh start /tmp/pgs1/data 55470) docs/bench-results/2026-11-25/run14/split.sh
URL=${URL:?the URL of a cluster of bench/pg_server.sh}
variant() {
  psql -q "$URL" -c "DROP SCHEMA IF EXISTS readpast CASCADE" 2>/dev/null
  ./build-bench/src/cli/readpast --db "$URL" init >/dev/null
  case $1 in
    asis) ;;
    notrig) psql -q "$URL" -c "DROP TRIGGER jobs_notify_inserted ON readpast.jobs" ;;
    nochecks) psql -q "$URL" -c "ALTER TABLE readpast.jobs DROP CONSTRAINT jobs_attempts_check, DROP CONSTRAINT jobs_max_attempts_check, DROP CONSTRAINT jobs_queue_check, DROP CONSTRAINT jobs_running_has_lease, DROP CONSTRAINT jobs_state_check" ;;
    neither) psql -q "$URL" -c "DROP TRIGGER jobs_notify_inserted ON readpast.jobs; ALTER TABLE readpast.jobs DROP CONSTRAINT jobs_attempts_check, DROP CONSTRAINT jobs_max_attempts_check, DROP CONSTRAINT jobs_queue_check, DROP CONSTRAINT jobs_running_has_lease, DROP CONSTRAINT jobs_state_check" ;;
  esac
}
for r in 1 2 3; do for v in asis notrig nochecks neither; do
  variant $v
  ./build-bench/bench/readpast_bench run --engine postgres --pg-url "$URL" --suites enqueue --enqueue-batches 100 --n-batch 50000 --out postgres-enqueue-$v.jsonl >/dev/null 2>&1
done; done
