#!/bin/bash
# prefill N jobs into each variant's table
URL=$1; N=$2; V=$3
P="convert_to('{\"seq\":' || i || ',\"user_id\":' || (100000 + i % 900000) || ',\"action\":\"send_welcome_email\",\"email\":\"user' || (100000 + i % 900000) || '@example.com\",\"locale\":\"en-GB\"}', 'UTF8')"
case $V in
  raw) psql -q "$URL" -c "TRUNCATE rawq.jobs" -c "INSERT INTO rawq.jobs (queue, payload) SELECT 'bench', $P FROM generate_series(1,$N) i" -c "VACUUM ANALYZE rawq.jobs" -c CHECKPOINT ;;
  rp) psql -q "$URL" -c "TRUNCATE readpast.jobs" -c "INSERT INTO readpast.jobs (queue, payload) SELECT 'bench', $P FROM generate_series(1,$N) i" -c "VACUUM ANALYZE readpast.jobs" -c CHECKPOINT ;;
  narrow) psql -q "$URL" -c "TRUNCATE exp.jobs, exp.leases" -c "INSERT INTO exp.jobs (queue, payload) SELECT 'bench', $P FROM generate_series(1,$N) i" -c "VACUUM ANALYZE exp.jobs" -c "VACUUM ANALYZE exp.leases" -c CHECKPOINT ;;
esac
if [[ $V == split ]]; then
  psql -q "$URL" -c "TRUNCATE exp2.jobs, exp2.bodies" -c "INSERT INTO exp2.jobs (queue) SELECT 'bench' FROM generate_series(1,$N) i" -c "INSERT INTO exp2.bodies (id, payload) SELECT id, $P FROM (SELECT id, id AS i FROM exp2.jobs) s" -c "VACUUM ANALYZE exp2.jobs" -c "VACUUM ANALYZE exp2.bodies" -c CHECKPOINT
fi
