import fs from 'node:fs';
import path from 'node:path';

/** The development owner and their workspace, remembered for `npm run dev-token`. */
export interface DevIdentity {
  user_id: string;
  workspace_id: string;
}

export const DEV_USER_ID = 'dev-user';
const FILE = 'dev-identity.json';

export function readDevIdentity(dataDir: string): DevIdentity | undefined {
  try {
    return JSON.parse(fs.readFileSync(path.join(dataDir, FILE), 'utf8')) as DevIdentity;
  } catch {
    return undefined;
  }
}

export function writeDevIdentity(dataDir: string, identity: DevIdentity): void {
  fs.mkdirSync(dataDir, { recursive: true });
  fs.writeFileSync(path.join(dataDir, FILE), `${JSON.stringify(identity)}\n`, { mode: 0o600 });
}
