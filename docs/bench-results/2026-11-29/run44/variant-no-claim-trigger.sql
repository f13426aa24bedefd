DROP TRIGGER live_claim_unique_key ON readpast.live;
