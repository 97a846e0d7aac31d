/**
 * The policies opened in this tab, newest first, per workspace: the API has no list of policies
 * (a policy is read by its id), so the console remembers the ids it has seen. sessionStorage,
 * like the session itself: a new tab starts empty.
 */
const MAX = 10;
const key = (workspaceId: string) => `agent-platform.recent-policies.${workspaceId}`;

export function recentPolicies(workspaceId: string): string[] {
  try {
    const value: unknown = JSON.parse(sessionStorage.getItem(key(workspaceId)) ?? '[]');
    return Array.isArray(value) ? value.filter((id): id is string => typeof id === 'string') : [];
  } catch {
    return [];
  }
}

export function rememberPolicy(workspaceId: string, policyId: string): void {
  const ids = [policyId, ...recentPolicies(workspaceId).filter((id) => id !== policyId)].slice(0, MAX);
  try {
    sessionStorage.setItem(key(workspaceId), JSON.stringify(ids));
  } catch {
    // Storage full or refused: the list is a convenience.
  }
}
