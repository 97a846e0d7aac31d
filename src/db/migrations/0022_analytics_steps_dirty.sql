-- A run step inserted, changed in a figure the step rollups hold, or deleted marks its run's UTC
-- day dirty when that day is before today and rolled up, as analytics_mark_dirty does for runs:
-- a step belongs to the day its run was created, found by the run's primary key. (Steps deleted
-- with their run find no run; the run's own trigger marks the day.)
CREATE FUNCTION analytics_mark_step_dirty() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  today date := (now() AT TIME ZONE 'UTC')::date;
  d date;
BEGIN
  IF TG_OP <> 'INSERT' THEN
    SELECT (created_at AT TIME ZONE 'UTC')::date INTO d FROM runs WHERE id = OLD.run_id;
    IF d < today THEN
      UPDATE analytics_rollup_days SET dirty = true
      WHERE workspace_id = OLD.workspace_id AND day = d AND NOT dirty;
    END IF;
  END IF;
  IF TG_OP <> 'DELETE' THEN
    SELECT (created_at AT TIME ZONE 'UTC')::date INTO d FROM runs WHERE id = NEW.run_id;
    IF d < today THEN
      UPDATE analytics_rollup_days SET dirty = true
      WHERE workspace_id = NEW.workspace_id AND day = d AND NOT dirty;
    END IF;
  END IF;
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER run_steps_analytics_dirty
AFTER INSERT OR DELETE OR UPDATE OF run_id, workspace_id, kind, agent_id, agent_name, provider, model, tokens_in, tokens_out, cost, latency_ms, started_at, finished_at
ON run_steps FOR EACH ROW EXECUTE FUNCTION analytics_mark_step_dirty();
--> statement-breakpoint
-- Days rolled up before the step rollups existed have none: computed again by the next sweep.
UPDATE analytics_rollup_days SET dirty = true;
