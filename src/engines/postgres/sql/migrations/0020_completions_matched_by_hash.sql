-- Migration 20: a batch of completions without retention reads live_pkey once, not once per
-- job.
--
-- Up to migration 19 the engine deleted a batch of completed jobs with a statement
-- (statements.sql, complete_delete) that joined the batch to live by `j.id = ANY
-- (ARRAY[r.id])`: a form that no statistics can turn into a merge join over the whole of
-- live_pkey (run 37), at the price of one index scan started again for every job of the
-- batch, about 1.4 µs a job more than a DELETE by id of the same batch (docs/benchmarks.md,
-- run 55).
--
-- complete_delete() reads the batch's ids in one scan of live_pkey (`id = ANY (p_ids)`) and
-- matches each row to its token by hash. A plain statement could not keep that plan: the
-- planner may choose a nested loop, a merge join or a sequential scan from statistics that a
-- held snapshot or a just-emptied table makes wrong (migration 13). A PL/pgSQL function
-- keeps its generic plan for the session and carries planner settings that leave it that one
-- plan (tests/postgres/engine_test.cpp pins it). The token is compared pairwise, never as a
-- set: a job is deleted only with its own id's token.
--
-- A job with dependents to tell (notify) is not deleted: the engine completes it with
-- `complete` instead, and retention deletes it once resolve_dependencies has told them.
-- `complete`, which moves the jobs to done, stays a statement: through the function it drained
-- batches of one and of 100 jobs at 0.97 of the statement in the engine's harness
-- (docs/benchmarks.md, run 56), although pgbench measured it faster.
--
-- No table is locked: one function is added. A binary of version 19 still sends its own
-- statement, which stays valid.
CREATE FUNCTION :"schema".complete_delete(p_ids bigint[], p_tokens uuid[])
RETURNS TABLE (id bigint, token uuid)
LANGUAGE plpgsql
SET enable_nestloop = off SET enable_mergejoin = off SET enable_seqscan = off
SET enable_bitmapscan = off SET plan_cache_mode = force_generic_plan SET jit = off
AS $fn$
#variable_conflict use_column
BEGIN
RETURN QUERY
DELETE FROM :"schema".live j
USING unnest(p_ids, p_tokens) AS r(id, token)
WHERE j.id = ANY (p_ids) AND j.id = r.id AND j.lease_token = r.token
  AND (j.state || '') = 'running' AND j.notify IS NOT TRUE
RETURNING j.id, r.token;
END
$fn$;
