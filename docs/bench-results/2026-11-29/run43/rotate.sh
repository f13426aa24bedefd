#!/usr/bin/env bash
# Run 43: the rotation and truncation of a ring schema (ring_schema.py), one turn a second,
# as docs/postgres-storage.md section 8 describes them, by a script instead of the engine:
#   RING=N bash rotate.sh URL LOG
# - rotate: every 10 s, to the next segment once it is free (truncated since its last use);
# - move: rows still live in a segment 20 s after it stopped being current go to segment 9;
# - truncate: a segment 5 s after it stopped being current, under a 20 ms lock_timeout, when
#   it holds no live row under the lock (the whole transaction is rolled back otherwise).
# Stops when killed.
U=${1:?a database URL}
LOG=${2:?a log file}
N=${RING:-4}
q() { psql -XAtq -v ON_ERROR_STOP=1 "$U" "$@" 2>>"$LOG.err"; }
cur=$(q -c "SELECT last_value % $N FROM readpast.live_cur")
since=$(date +%s.%N)
declare -a free left
for s in $(seq 0 $((N - 1))); do free[s]=1; left[s]=0; done
free[cur]=0
while :; do
  now=$(date +%s.%N)
  nxt=$(((cur + 1) % N))
  if (($(echo "$now - $since >= 10" | bc))) && ((free[nxt])); then
    q -c "SELECT setval('readpast.live_cur', $nxt)" >/dev/null
    left[cur]=$now
    free[nxt]=0
    cur=$nxt
    since=$now
    echo "$(date +%T.%N | cut -c1-12) rotate -> $cur" >>"$LOG"
  fi
  for s in $(seq 0 $((N - 1))); do
    ((s == cur || free[s])) && continue
    age=$(echo "$now - ${left[s]}" | bc)
    (($(echo "$age < 5" | bc))) && continue
    if (($(echo "$age >= 20" | bc))); then
      n=$(q -c "WITH m AS (UPDATE readpast.live SET seg = 9 WHERE seg = $s AND id IN (
                  SELECT id FROM readpast.live_$s WHERE state IN ('available', 'running', 'waiting')
                  LIMIT 5000 FOR UPDATE SKIP LOCKED) RETURNING 1)
                SELECT count(*) FROM m")
      [[ "$n" != 0 ]] && echo "$(date +%T.%N | cut -c1-12) moved $n from $s" >>"$LOG"
    fi
    t0=$(date +%s%N)
    q -c "SET lock_timeout = '20ms'" -c "BEGIN" \
      -c "LOCK TABLE readpast.live_$s IN ACCESS EXCLUSIVE MODE" \
      -c "DO \$\$ BEGIN IF EXISTS (SELECT 1 FROM readpast.live_$s) THEN
            RAISE EXCEPTION 'live rows'; END IF; END \$\$" \
      -c "TRUNCATE readpast.live_$s" -c "COMMIT" >/dev/null &&
      {
        free[s]=1
        echo "$(date +%T.%N | cut -c1-12) truncated $s in $((($(date +%s%N) - t0) / 1000000)) ms (psql included)" >>"$LOG"
      }
  done
  sleep 1
done
