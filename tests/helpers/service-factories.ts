import type { Db } from '../../src/db/transaction.ts';
import { createWorkspacesService } from '../../src/modules/workspaces/workspaces.service.ts';

let seq = 0;

/**
 * A workspace of its own for a service-ring test (one database per file, one workspace per
 * test: CONVENTIONS "Tests"), created through the workspaces service as its owner would create
 * it. The owner is `<name>-<n>`, a user id no other test of the file uses.
 */
export async function buildServiceWorkspace(
  db: Db,
  name: string,
): Promise<{ userId: string; workspaceId: string }> {
  seq += 1;
  const userId = `${name}-${seq}`;
  const workspace = await createWorkspacesService(db).createWorkspace(userId, { name: `${name} ${seq}` });
  return { userId, workspaceId: workspace.id };
}
