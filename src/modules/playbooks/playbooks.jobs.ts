import { Type } from 'typebox';
import { defineJob, JobTimeoutError } from '../../jobs/job.ts';
import { createPeriodicSweep } from '../../jobs/periodic-sweep.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import type { Component } from '../../lifecycle.ts';
import type { Logger } from '../../logger.ts';
import type { PlaybooksService } from './playbooks.service.ts';
import { DEFAULT_SCHEDULE, previousSlot } from './schedule.ts';

export interface NightlyMiningOptions {
  playbooks: Pick<PlaybooksService, 'schedules' | 'claimSlot' | 'finishSlot' | 'nightly'>;
  log: Logger;
  /** Names this process's claims. */
  owner: string;
  /** How often the schedules are looked at (60 s). */
  intervalMs?: number;
  /** A claim not finished after this long is taken again (its process died); 10 minutes. */
  leaseMs?: number;
  now?: () => Date;
}

/**
 * The nightly mining job of every consuming process: every `intervalMs` it looks for the
 * workspaces whose schedule has fired since their last run (a slot after the workspace was
 * created) and runs each slot once across every process: the slot is claimed in the database
 * first (`claimSlot`), so of several processes one mines. A process that dies mid-mine leaves
 * its claim unfinished; after the lease another takes the slot again, and mining again only
 * updates the same playbooks. Slots missed while no process ran are caught up once (the
 * latest), not replayed.
 */
export function createNightlyMining(options: NightlyMiningOptions) {
  const intervalMs = options.intervalMs ?? 60_000;
  const leaseMs = options.leaseMs ?? 600_000;
  const now = options.now ?? (() => new Date());
  /** One look at every schedule; answers how many slots this process ran. */
  async function sweepOnce(stopping: AbortSignal): Promise<number> {
    const at = now();
    let ran = 0;
    for (const schedule of await options.playbooks.schedules()) {
      if (stopping.aborted) break;
      let slot: Date;
      try {
        slot = previousSlot(
          schedule.cron ?? DEFAULT_SCHEDULE.cron,
          schedule.time_zone ?? DEFAULT_SCHEDULE.timeZone,
          at,
        );
      } catch (error) {
        options.log.warn(
          { err: error, workspace_id: schedule.workspace_id },
          'a nightly mining schedule cannot be read',
        );
        continue;
      }
      if (slot <= schedule.created_at) continue;
      const recorded = schedule.slot ?? undefined;
      if (
        recorded &&
        recorded >= slot &&
        (schedule.finished_at || (schedule.claimed_at?.getTime() ?? 0) > at.getTime() - leaseMs)
      ) {
        continue;
      }
      if (!(await options.playbooks.claimSlot(schedule.workspace_id, slot, options.owner, leaseMs))) continue;
      ran += 1;
      try {
        const result = await options.playbooks.nightly(schedule.workspace_id, stopping);
        await options.playbooks.finishSlot(schedule.workspace_id, slot, options.owner, { result });
        options.log.info(
          { workspace_id: schedule.workspace_id, slot, ...result },
          'nightly playbook mining done',
        );
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        options.log.warn(
          { err: error, workspace_id: schedule.workspace_id },
          'nightly playbook mining failed; retried after its lease',
        );
        await options.playbooks
          .finishSlot(schedule.workspace_id, slot, options.owner, { error: message.slice(0, 2000) })
          .catch(() => {});
      }
    }
    return ran;
  }

  return createPeriodicSweep({
    name: 'Nightly playbook mining',
    log: options.log,
    intervalMs,
    failure: 'the nightly mining sweep failed; it runs again shortly',
    work: (_reason, signal) => sweepOnce(signal),
  });
}

/** The queue's name for a background mine (`POST /api/playbooks/mine` answered 202). */
export const PLAYBOOKS_MINE = 'playbooks.mine';

/** A mine of a million runs takes about 15 s; past this it is failed, not retried forever. */
const MINE_TIMEOUT_MS = 30 * 60_000;

/** One job per mine while it waits or runs. */
export const mineJobId = (mineId: string): string => `playbooks-mine:${mineId}`;

/**
 * Does one background mine. The mine's row says what to mine and whether it already ended,
 * so a duplicate or late delivery does nothing. A timeout fails the mine; a stopping process
 * hands the job back (the mine starts again; mining again only updates the same playbooks).
 */
export const minePlaybooksJob = defineJob({
  name: PLAYBOOKS_MINE,
  payload: Type.Object({ mine_id: Type.String({ format: 'uuid' }) }),
  attempts: 3,
  backoffMs: 5_000,
  timeoutMs: MINE_TIMEOUT_MS,
  async handle(deps: { playbooks: Pick<PlaybooksService, 'runMineJob' | 'failMine'> }, payload, signal) {
    try {
      await deps.playbooks.runMineJob(payload.mine_id, signal);
    } catch (error) {
      if (!(signal.reason instanceof JobTimeoutError)) throw error;
      await deps.playbooks.failMine(
        payload.mine_id,
        `mining took longer than ${MINE_TIMEOUT_MS / 60_000} minutes`,
      );
    }
  },
});

export interface MineRecoveryOptions {
  playbooks: Pick<PlaybooksService, 'recoverUnfinishedMines'>;
  queue: Pick<JobQueue, 'onJobsLost'>;
  log: Logger;
}

/**
 * A consuming process hands unfinished background mines to the queue again when it starts and
 * when the queue says it lost its jobs: the mine rows are the truth, the queue only wakes workers.
 */
export function createMineRecovery(options: MineRecoveryOptions): Component {
  return createPeriodicSweep({
    name: 'Playbook mine recovery',
    log: options.log,
    failure: 'the playbook mine recovery sweep failed',
    atStart: true,
    alsoOn: (sweep) => options.queue.onJobsLost(sweep),
    async work() {
      const count = await options.playbooks.recoverUnfinishedMines();
      if (count > 0)
        options.log.info({ mines: count }, 'handed unfinished playbook mines to the queue again');
      return count;
    },
  });
}
