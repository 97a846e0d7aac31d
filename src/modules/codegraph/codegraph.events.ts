import type { ActivityInput } from '../activity/activity.service.ts';
import type { IndexStats } from './codegraph.repository.ts';

interface ProjectRef {
  id: string;
  workspace_id: string;
  name: string;
}

/** The feed's line for an index sent to the background: `Code project “shop” indexing: 800 files`. */
export const codegraphStarted = (project: ProjectRef, files: number, actor?: string): ActivityInput => ({
  workspaceId: project.workspace_id,
  kind: 'codegraph.started',
  subjectType: 'codegraph_project',
  subjectId: project.id,
  message: `Code project “${project.name}” indexing in the background: ${files} files`,
  data: { name: project.name, files },
  actor,
});

/** The feed's line for a finished index: `Code project “shop” indexed: 120 files, 900 symbols`. */
export const codegraphIndexed = (project: ProjectRef, stats: IndexStats, actor?: string): ActivityInput => ({
  workspaceId: project.workspace_id,
  kind: 'codegraph.indexed',
  subjectType: 'codegraph_project',
  subjectId: project.id,
  message: `Code project “${project.name}” indexed: ${stats.files} files, ${stats.symbols} symbols`,
  data: {
    name: project.name,
    files: stats.files,
    symbols: stats.symbols,
    calls: stats.calls.total,
    resolved_calls: stats.calls.resolved,
    duration_ms: stats.duration_ms,
  },
  actor,
});

/** The feed's line for a background index that failed, with the reason (safe to show). */
export const codegraphFailed = (project: ProjectRef, error: string, actor?: string): ActivityInput => ({
  workspaceId: project.workspace_id,
  kind: 'codegraph.failed',
  subjectType: 'codegraph_project',
  subjectId: project.id,
  message: `Code project “${project.name}” could not be indexed: ${error}`,
  data: { name: project.name, error },
  actor,
});
