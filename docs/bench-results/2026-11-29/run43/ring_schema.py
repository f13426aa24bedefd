#!/usr/bin/env python3
"""Run 43: schema 14 with `live` partitioned into a ring of segments (a prototype by hand).

  RING=N STABLE=1|0 python3 ring_schema.py SCHEMA_DUMP OUT_SQL

Reads `pg_dump -s -n readpast` of a schema-14 database and writes the same schema with
`live` partitioned by LIST (seg): segments 0..N-1 (the ring, autovacuum off; run43.sh turns it
on where a run says so) and, with STABLE=1, segment 9, a plain segment with live's settings
for rows moved out of a segment that must be emptied (rotate.sh). What partitioning forces
on PostgreSQL 15: the identity becomes a default from the same sequence, the primary key a
plain index on id, and the unique index on (queue, unique_key) a plain one (a unique index
of a partitioned table must contain seg), so keyed enqueues are not covered.
"""
import os
import re
import sys

n = int(os.environ.get('RING', '4'))
stable = os.environ.get('STABLE', '1') == '1'
s = open(sys.argv[1]).read()
# The ring's current segment: a sequence, read outside MVCC, set by the rotation.
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
body += ",\n    seg smallint DEFAULT readpast.live_seg() NOT NULL"
parts = ''.join(f'CREATE TABLE readpast.live_{k} PARTITION OF readpast.live FOR VALUES IN ({k}) '
                'WITH (autovacuum_enabled = off, fillfactor = 80);\n' for k in range(n))
if stable:
    parts += ('CREATE TABLE readpast.live_9 PARTITION OF readpast.live FOR VALUES IN (9) WITH ('
              + m.group(3) + ');\n')
s = (s[:m.start()] + 'CREATE TABLE readpast.live (' + body + '\n) PARTITION BY LIST (seg);\n'
     + parts + s[m.end():])
s = re.sub(r'ALTER TABLE readpast\.live ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY \(.*?\);\n',
           '', s, flags=re.S)
s = re.sub(r'ALTER TABLE ONLY readpast\.live\n    ADD CONSTRAINT live_pkey PRIMARY KEY \(id\);',
           'CREATE INDEX live_pkey ON readpast.live (id);', s)
s = s.replace('CREATE UNIQUE INDEX jobs_unique_key_idx', 'CREATE INDEX jobs_unique_key_idx')
# lease_head_walk() counts the pages of every segment's index, not of the parent's (none).
for idx in ('jobs_lease_idx', 'jobs_due_idx'):
    s = s.replace(f"""pg_stat_get_xact_blocks_fetched('"readpast".{idx}'::regclass)""",
                  f"""(SELECT sum(pg_stat_get_xact_blocks_fetched(p.relid))::bigint """
                  f"""FROM pg_partition_tree('"readpast".{idx}'::regclass) p)""")
s = s.replace('OVERRIDING SYSTEM VALUE ', '')
open(sys.argv[2], 'w').write(s)
