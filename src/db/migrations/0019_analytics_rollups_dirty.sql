-- A run of a UTC day before today that is inserted, changed in a figure the rollups hold, or
-- deleted marks its day dirty when that day is rolled up (analytics_rollup_days has a row);
-- the analytics read that day from the raw runs until the rollup job computes it again. Runs of
-- today (the run engine's writes) only pay the date comparison.
CREATE FUNCTION analytics_mark_dirty() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  today date := (now() AT TIME ZONE 'UTC')::date;
  d date;
BEGIN
  IF TG_OP <> 'INSERT' THEN
    d := (OLD.created_at AT TIME ZONE 'UTC')::date;
    IF d < today THEN
      UPDATE analytics_rollup_days SET dirty = true
      WHERE workspace_id = OLD.workspace_id AND day = d AND NOT dirty;
    END IF;
  END IF;
  IF TG_OP <> 'DELETE' THEN
    d := (NEW.created_at AT TIME ZONE 'UTC')::date;
    IF d < today THEN
      UPDATE analytics_rollup_days SET dirty = true
      WHERE workspace_id = NEW.workspace_id AND day = d AND NOT dirty;
    END IF;
  END IF;
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER runs_analytics_dirty
AFTER INSERT OR DELETE OR UPDATE OF workspace_id, created_at, status, tokens_in, tokens_out, cost, duration_ms, workflow_id, workflow_name
ON runs FOR EACH ROW EXECUTE FUNCTION analytics_mark_dirty();
