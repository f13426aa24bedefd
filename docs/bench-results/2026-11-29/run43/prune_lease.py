#!/usr/bin/env python3
"""Run 43: the two lease functions of a ring schema (ring_schema.py) read only the current
and the previous segment and segment 9, so that PostgreSQL prunes the others when the
executor starts (PL/pgSQL variables are parameters of the cached plan: "Subplans Removed").

  RING=N python3 prune_lease.py RING_SQL OUT_SQL
"""
import os
import re
import sys

n = int(os.environ.get('RING', '4'))
s = open(sys.argv[1]).read()
decl = (f'v_s0 smallint := (SELECT (last_value % {n})::smallint FROM "readpast".live_cur);\n'
        f'  v_s1 smallint := ((v_s0 + {n - 1}) % {n})::smallint;\n')
cond = 'seg = ANY (ARRAY[v_s0, v_s1, 9::smallint]) AND '
out = []
for name in ('lease_head_walk', 'lease_lanes'):
    a = s.index(f'CREATE FUNCTION readpast.{name}(')
    f = s[a:s.index('\n$$;', a) + 4].replace('CREATE FUNCTION', 'CREATE OR REPLACE FUNCTION', 1)
    if 'DECLARE\n' in f:
        f = f.replace('DECLARE\n', 'DECLARE\n  ' + decl, 1)
    else:
        f = f.replace('#variable_conflict use_column\nBEGIN',
                      '#variable_conflict use_column\nDECLARE\n  ' + decl + 'BEGIN', 1)
    f = re.sub(r'(FROM "readpast"\.live (\w)\s+WHERE )',
               lambda m: m.group(1) + m.group(2) + '.' + cond, f)
    f = f.replace('WHERE j.id = ANY (ARRAY(SELECT x.id FROM picked x))',
                  'WHERE j.' + cond + 'j.id = ANY (ARRAY(SELECT x.id FROM picked x))')
    out.append(f)
open(sys.argv[2], 'w').write('\n'.join(out) + '\n')
