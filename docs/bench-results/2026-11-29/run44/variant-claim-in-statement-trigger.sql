DROP TRIGGER live_claim_unique_key ON readpast.live;
CREATE OR REPLACE FUNCTION readpast.notify_inserted() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $fn$
DECLARE
  v_old boolean;
BEGIN
  WITH claimed AS (
    INSERT INTO readpast.unique_keys (queue, unique_key, job_id)
    SELECT n.queue, n.unique_key, n.id FROM new_jobs n
    WHERE n.unique_key IS NOT NULL
      AND NOT EXISTS (SELECT FROM readpast.unique_keys k
                      WHERE k.queue = n.queue AND k.unique_key = n.unique_key AND k.job_id = n.id)
  )
  SELECT bool_or(w.old) INTO v_old FROM (
    SELECT q.old, CASE WHEN q.due THEN pg_notify('readpast.jobs', q.queue) END AS woken
    FROM (SELECT DISTINCT n.queue, n.run_at <= statement_timestamp() AS due,
                 n.run_at < statement_timestamp() - interval '100 milliseconds' AS old
          FROM new_jobs n WHERE n.state = 'available') q
    OFFSET 0) w;
  IF v_old OR clock_timestamp() - statement_timestamp() > interval '100 milliseconds' THEN
    INSERT INTO readpast.lane_marks (queue, priority, run_at, id)
    SELECT DISTINCT ON (n.queue, n.priority) n.queue, n.priority, n.run_at, n.id
    FROM new_jobs n
    WHERE n.state = 'available'
      AND (n.run_at < statement_timestamp() - interval '100 milliseconds'
           OR clock_timestamp() - statement_timestamp() > interval '100 milliseconds')
    ORDER BY n.queue, n.priority, n.run_at, n.id;
    PERFORM readpast.forget_old_marks();
  END IF;
  RETURN NULL;
END
$fn$;
