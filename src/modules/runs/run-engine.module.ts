import type { Config } from '../../config.ts';
import type { Db } from '../../db/transaction.ts';
import type { EventHub } from '../../events/event-hub.ts';
import { bindJob } from '../../jobs/job.ts';
import type { Module } from '../../module.ts';
import { createModelTurns, type ModelGateway, type ToolBinder } from '../providers/providers.service.ts';
import { createRunEngine, type RunEngineDependencies } from './run-engine.ts';
import type { CommitRunChange, WriteRun } from './run-log.ts';
import { executeRunJob } from './runs.jobs.ts';

export interface RunEngineModuleDependencies {
  db: Db;
  /** The runs module's log writers (`runs.writers`). */
  writers: { commit: CommitRunChange; write: WriteRun };
  agents: RunEngineDependencies['agents'];
  workflows: RunEngineDependencies['workflows'];
  /** Model turns go through the gateway with the agent's tools bound for each. */
  gateway: Pick<ModelGateway, 'stream'>;
  tools: ToolBinder;
  /** Playbooks attached to agents: read by the claim, recorded on the steps they trigger. */
  playbooks: NonNullable<RunEngineDependencies['playbooks']>;
  /** Assembles the context of an agent that has a policy. */
  policies: NonNullable<RunEngineDependencies['policies']>;
  hub: Pick<EventHub, 'subscribe'>;
  /** Names this process's claims (`lease_owner`). */
  owner: string;
  config: { queue: Pick<Config['queue'], 'runLeaseMs'> };
}

/**
 * The run engine: executes runs as the `run.execute` job (claims with a lease, steps per
 * execution policy, recovery after a lost worker). Part of the runs module, built in a second
 * step: it sits above the policies and playbooks modules, which sit above the runs service.
 */
export function createRunEngineModule(deps: RunEngineModuleDependencies) {
  const engine = createRunEngine({
    db: deps.db,
    ...deps.writers,
    agents: deps.agents,
    workflows: deps.workflows,
    models: createModelTurns({ gateway: deps.gateway, tools: deps.tools }),
    hub: deps.hub,
    owner: deps.owner,
    leaseMs: deps.config.queue.runLeaseMs,
    playbooks: deps.playbooks,
    policies: deps.policies,
  });
  return { engine, jobs: [bindJob(executeRunJob, { engine })] } satisfies Module;
}
