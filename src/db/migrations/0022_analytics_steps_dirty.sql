-- Marks a rolled-up workspace-day dirty when it is before today (UTC): the one rule of the
-- rollups' dirty tracking, shared by the triggers on runs and on run steps. Runs of today (the
-- run engine's writes) only pay the date comparison.
CREATE FUNCTION analytics_mark_day_dirty(ws uuid, d date) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF d < (now() AT TIME ZONE 'UTC')::date THEN
    UPDATE analytics_rollup_days SET dirty = true WHERE workspace_id = ws AND day = d AND NOT dirty;
  END IF;
END;
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION analytics_mark_dirty() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' THEN
    PERFORM analytics_mark_day_dirty(OLD.workspace_id, (OLD.created_at AT TIME ZONE 'UTC')::date);
  END IF;
  IF TG_OP <> 'DELETE' THEN
    PERFORM analytics_mark_day_dirty(NEW.workspace_id, (NEW.created_at AT TIME ZONE 'UTC')::date);
  END IF;
  RETURN NULL;
END;
$$;
--> statement-breakpoint
-- A run step inserted, changed in a figure the step rollups hold, or deleted marks the day its
-- run was created (found by the run's primary key). Steps deleted with their run find no run;
-- the run's own trigger marks the day.
CREATE FUNCTION analytics_mark_step_dirty() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' THEN
    PERFORM analytics_mark_day_dirty(OLD.workspace_id, (r.created_at AT TIME ZONE 'UTC')::date)
    FROM runs r WHERE r.id = OLD.run_id;
  END IF;
  IF TG_OP <> 'DELETE' THEN
    PERFORM analytics_mark_day_dirty(NEW.workspace_id, (r.created_at AT TIME ZONE 'UTC')::date)
    FROM runs r WHERE r.id = NEW.run_id;
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
