-- Migration 20: a batch of completions reads live_pkey once, not once per job.
--
-- Up to migration 19 the engine completed a batch with statements (statements.sql, complete
-- and complete_delete) that joined the batch to live by `j.id = ANY (ARRAY[r.id])`: a form
-- that no statistics can turn into a merge join over the whole of live_pkey (run 37), at the
-- price of one index scan started again for every job of the batch, about 1.4 µs a job more
-- than a DELETE by id of the same batch (docs/benchmarks.md, run 55).
--
-- complete_batch() reads the batch's ids in one scan of live_pkey (`id = ANY (p_ids)`) and
-- matches each row to its token by hash. A plain statement could not keep that plan: the
-- planner may choose a nested loop, a merge join or a sequential scan from statistics that a
-- held snapshot or a just-emptied table makes wrong (migration 13). A PL/pgSQL function
-- keeps its generic plans for the session and carries planner settings that leave each
-- statement that one plan (tests/postgres/engine_test.cpp pins them). The token is compared
-- pairwise, never as a set: a job is completed only with its own id's token.
--
-- p_keep: the jobs move to done as succeeded (a retention above zero); otherwise they are
-- deleted, except a job with dependents to tell (notify), which the engine then completes
-- with p_keep, so that retention deletes it once resolve_dependencies has told them.
--
-- No table is locked: one function is added. A binary of version 19 still sends its own
-- statements, which stay valid.
CREATE FUNCTION :"schema".complete_batch(p_ids bigint[], p_tokens uuid[], p_keep boolean)
RETURNS TABLE (id bigint, token uuid)
LANGUAGE plpgsql
SET enable_nestloop = off SET enable_mergejoin = off SET enable_seqscan = off
SET enable_bitmapscan = off SET plan_cache_mode = force_generic_plan SET jit = off
AS $fn$
#variable_conflict use_column
BEGIN
IF NOT p_keep THEN
  RETURN QUERY
  DELETE FROM :"schema".live j
  USING unnest(p_ids, p_tokens) AS r(id, token)
  WHERE j.id = ANY (p_ids) AND j.id = r.id AND j.lease_token = r.token
    AND (j.state || '') = 'running' AND j.notify IS NOT TRUE
  RETURNING j.id, r.token;
  RETURN;
END IF;
RETURN QUERY
WITH ended AS (
  DELETE FROM :"schema".live j
  USING unnest(p_ids, p_tokens) AS r(id, token)
  WHERE j.id = ANY (p_ids) AND j.id = r.id AND j.lease_token = r.token
    AND (j.state || '') = 'running'
  RETURNING j.*, r.token AS settled_token
), kept AS (
  INSERT INTO :"schema".done
  SELECT e.id, e.queue, 'succeeded', e.priority, e.run_at, e.attempts, e.max_attempts,
         e.lease_token, e.leased_by, NULL, e.enqueued_at, e.started_at,
         statement_timestamp(), e.unique_key, e.last_error, e.payload, e.progress,
         e.waiting_for, e.notify, e.delay_us, e.group_name
  FROM ended e
)
SELECT e.id, e.settled_token FROM ended e;
END
$fn$;
