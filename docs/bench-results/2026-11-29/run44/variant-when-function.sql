CREATE FUNCTION readpast.key_claimed(q text, k text, i bigint) RETURNS boolean LANGUAGE sql VOLATILE
AS $$ SELECT EXISTS (SELECT FROM readpast.unique_keys u WHERE u.queue = q AND u.unique_key = k AND u.job_id = i) $$;
DROP TRIGGER live_claim_unique_key ON readpast.live;
CREATE TRIGGER live_claim_unique_key AFTER INSERT ON readpast.live FOR EACH ROW
  WHEN (NEW.unique_key IS NOT NULL AND NOT readpast.key_claimed(NEW.queue, NEW.unique_key, NEW.id))
  EXECUTE FUNCTION readpast.keep_unique_key();
