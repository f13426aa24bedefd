#!/usr/bin/env python3
"""Run 59: the two rings of docs/postgres-storage.md section 4 on the engine, by hand.

  RING=N python3 ready_ring_schema.py SCHEMA_DUMP OUT_SQL

Reads `pg_dump -s -n readpast` of a database made by schema 22 plus run 57's running ring
(docs/bench-results/2026-12-07/run57/running_ring_prototype.sql as migration 23), where `live`
holds available jobs only (a lease moves each job it takes to `running`), and writes the same
schema with `live` partitioned by LIST (seg) into the ready ring: segments 0..N-1 (autovacuum
off, fillfactor 100: rows are inserted and deleted, never updated in the drain) and segment 9,
a plain segment with live's settings for rows still available when their segment must be
emptied; and rotate_ready(), which empties and truncates the next segment and makes it
current (rotate.sh calls it). What partitioning forces on PostgreSQL 15, as in run 43's
ring_schema.py: the identity becomes a default from the same sequence, the primary key a plain
index on id, and the lease's count of index pages sums the segments' indexes.
"""
import os
import re
import sys

n = int(os.environ.get('RING', '4'))
s = open(sys.argv[1]).read()
pre = f'''
CREATE SEQUENCE readpast.live_cur MINVALUE 0 START 0;
CREATE FUNCTION readpast.live_seg() RETURNS smallint LANGUAGE sql VOLATILE
  AS 'SELECT (last_value % {n})::smallint FROM readpast.live_cur';
CREATE SEQUENCE readpast.jobs_id_seq;
'''
s = s.replace('CREATE SCHEMA readpast;\n', 'CREATE SCHEMA readpast;\n' + pre, 1)
m = re.search(r'CREATE TABLE readpast\.live \((.*?)\n\)(\nWITH \((.*?)\))?;\n', s, re.S)
assert m, 'no CREATE TABLE readpast.live in the dump'
body = m.group(1).replace('    id bigint NOT NULL,',
                          "    id bigint DEFAULT nextval('readpast.jobs_id_seq') NOT NULL,")
# The current segment is the column's default, a constant that rotate_ready() changes: a
# default that read live_cur would be a function call per row (2.1 us a row measured).
body += ",\n    seg smallint DEFAULT 0 NOT NULL"
parts = ''.join(f'CREATE TABLE readpast.live_{k} PARTITION OF readpast.live FOR VALUES IN ({k}) '
                'WITH (autovacuum_enabled = off, fillfactor = 100);\n' for k in range(n))
parts += ('CREATE TABLE readpast.live_9 PARTITION OF readpast.live FOR VALUES IN (9) WITH ('
          + m.group(3) + ');\n')
s = (s[:m.start()] + 'CREATE TABLE readpast.live (' + body + '\n) PARTITION BY LIST (seg);\n'
     + parts + s[m.end():])
s, k = re.subn(r'ALTER TABLE readpast\.live ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY \(.*?\);\n',
               '', s, flags=re.S)
assert k == 1
s, k = re.subn(r'ALTER TABLE ONLY readpast\.live\n    ADD CONSTRAINT live_pkey PRIMARY KEY \(id\);',
               'CREATE INDEX live_pkey ON readpast.live (id);', s)
assert k == 1
for idx in ('jobs_lease_idx',):
    s = s.replace(f"""pg_stat_get_xact_blocks_fetched('"readpast".{idx}'::regclass)""",
                  f"""(SELECT sum(pg_stat_get_xact_blocks_fetched(p.relid))::bigint """
                  f"""FROM pg_partition_tree('"readpast".{idx}'::regclass) p)""")
cols = [c for c in re.findall(r'^    (\w+) ', m.group(1), re.M) if c != 'CONSTRAINT']
assert cols[0] == 'id' and 'payload' in cols
g = ', '.join('g.' + c for c in cols)
s += f'''
-- Rotation of the ready ring (docs/postgres-storage.md, section 8, as one short transaction):
-- under live's lock, the next segment's rows that are still available (none, unless the
-- backlog is older than a ring's lap) move to segment 9, the segment is truncated, and the
-- default makes it current. Every lease locks every segment (no pruning), so the lock costs
-- the same as one on the segment alone; lock_timeout keeps a long reader's lock from stopping
-- the workers behind it, and the call is simply tried again at the next turn.
CREATE FUNCTION readpast.rotate_ready() RETURNS bigint
LANGUAGE plpgsql SET lock_timeout = '100ms' AS $fn$
DECLARE
  cur bigint;
  nxt smallint;
  moved bigint;
BEGIN
  SELECT c.last_value INTO cur FROM readpast.live_cur c;
  nxt := ((cur + 1) % {n})::smallint;
  LOCK TABLE readpast.live IN ACCESS EXCLUSIVE MODE;
  EXECUTE format('WITH gone AS (DELETE FROM readpast.%I RETURNING *)
                  INSERT INTO readpast.live SELECT {g}, 9 FROM gone g',
                 'live_' || nxt);
  GET DIAGNOSTICS moved = ROW_COUNT;
  EXECUTE format('TRUNCATE readpast.%I', 'live_' || nxt);
  EXECUTE format('ALTER TABLE readpast.live ALTER COLUMN seg SET DEFAULT %s', nxt);
  PERFORM setval('readpast.live_cur', cur + 1);
  RETURN moved;
END
$fn$;
'''
open(sys.argv[2], 'w').write(s)
