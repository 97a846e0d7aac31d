/**
 * Nightly mining schedules: cron expressions in a workspace's time zone (pure; cron-parser
 * does the calendar arithmetic, daylight-saving changes included).
 */
import { CronExpressionParser } from 'cron-parser';

/** The spec's "2 AM, configurable": five-field cron, in UTC unless the workspace says otherwise. */
export const DEFAULT_SCHEDULE = { cron: '0 2 * * *', timeZone: 'UTC' } as const;

/** Why a schedule cannot be used, per field; empty when it can. */
export function scheduleProblems(cron: string | undefined, timeZone: string | undefined) {
  const problems: Array<{ field: 'cron' | 'time_zone'; message: string }> = [];
  if (timeZone !== undefined) {
    try {
      new Intl.DateTimeFormat('en', { timeZone });
    } catch {
      problems.push({ field: 'time_zone', message: 'is not an IANA time zone (such as Europe/Paris)' });
    }
  }
  if (cron !== undefined) {
    if (cron.trim().split(/\s+/).length !== 5) {
      problems.push({
        field: 'cron',
        message: 'must have five fields: minute hour day-of-month month day-of-week',
      });
    } else {
      try {
        CronExpressionParser.parse(cron, { strict: false }).next();
      } catch (error) {
        problems.push({ field: 'cron', message: `is not a cron expression: ${(error as Error).message}` });
      }
    }
  }
  return problems;
}

/** The latest time at or before `now` the schedule fires. */
export function previousSlot(cron: string, timeZone: string, now: Date): Date {
  // One millisecond later so that a slot exactly at `now` counts as passed.
  return CronExpressionParser.parse(cron, { currentDate: new Date(now.getTime() + 1), tz: timeZone })
    .prev()
    .toDate();
}

/** The next time after `now` the schedule fires. */
export function nextSlot(cron: string, timeZone: string, now: Date): Date {
  return CronExpressionParser.parse(cron, { currentDate: now, tz: timeZone }).next().toDate();
}
