import { useQueryClient } from '@tanstack/react-query';
import { type ActivityEvent, useActivityFeed } from '../../lib/activity.ts';

/**
 * Reads `keys` again when the workspace's activity says something of theirs changed
 * (`document.*`, `source.*`, `codegraph.*` events), as they happen.
 */
export function useKnowledgeActivity(prefixes: readonly string[], keys: readonly string[]) {
  const queryClient = useQueryClient();
  // The feed keeps the latest handler itself: no need for a stable one.
  return useActivityFeed((event: ActivityEvent) => {
    if (!prefixes.some((prefix) => event.kind.startsWith(prefix))) return;
    for (const key of keys) void queryClient.invalidateQueries({ queryKey: [key] });
  }, 1);
}

export const formatBytes = (bytes: number) =>
  bytes < 1024
    ? `${bytes} B`
    : bytes < 1024 * 1024
      ? `${(bytes / 1024).toFixed(1)} KiB`
      : `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
