import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { readDevIdentity } from '../../src/modules/identity/dev-identity.ts';
import { loadDevSigningKey, mintDevToken } from '../../src/modules/identity/dev-issuer.ts';
import { buildZip, SAMPLE_PROJECT, sampleZipEntries } from '../helpers/archives.ts';
import { commandLines, type DocBlock, extractBlocks, SHELL_LANGUAGES } from '../helpers/doc-blocks.ts';
import { createTestDatabaseEnv, type TestDatabaseEnv } from '../helpers/test-app.ts';

/**
 * Every shell command of README.md and docs/*.md runs against a started service, so the
 * examples cannot drift from the product (README "Examples are tested").
 *
 * One service process (`src/main.ts`, as `npm start` runs it) listens on a loopback port with a
 * throwaway database; the examples' `localhost:8080` is rewritten to it. Each Markdown file's
 * shell blocks run in document order in one `bash` (so a variable a block sets serves the next,
 * as in a reader's terminal), with `set -e -o pipefail` and `curl` answering a 4xx or 5xx as a
 * failure (`--fail-with-body`). The README sets `$TOKEN`, `$WS` and `H` itself (First requests);
 * every docs file starts with them set the same way. A failure names the file and line.
 */

const root = path.resolve(import.meta.dirname, '../..');
const DOCUMENTED_ADDRESS = 'localhost:8080';
const FILES = [
  'README.md',
  ...fs
    .readdirSync(path.join(root, 'docs'))
    .sort()
    .map((name) => `docs/${name}`),
].filter((file) => file.endsWith('.md'));

/**
 * Cap of one file's commands; a stream that never ends fails instead of hanging the suite. The
 * README's took 35 to 65 s on a 2-core machine at a load of 15 to 26 (six test runs beside it),
 * most of it its two `npm run dev-token`; the cap leaves such a machine room.
 */
const FILE_TIMEOUT_MS = 150_000;

interface FileBlocks {
  file: string;
  blocks: DocBlock[];
}

const documents: FileBlocks[] = FILES.map((file) => {
  const { blocks, problems } = extractBlocks(file, fs.readFileSync(path.join(root, file), 'utf8'));
  if (problems.length > 0) {
    throw new Error(
      `${problems.map((p) => `${p.file}:${p.line}: ${p.text}`).join('\n')}\n(a docs-test marker is ` +
        '"<!-- docs-test: skip (reason) -->" right before a fenced block; every fence is closed)',
    );
  }
  return { file, blocks };
});

describe('the fenced blocks of README.md and docs/', () => {
  it('each name their language, so no command hides in an unlabelled block', () => {
    const unlabelled = documents.flatMap((d) =>
      d.blocks.filter((b) => b.language === '').map((b) => `${b.file}:${b.line}`),
    );
    expect(unlabelled).toEqual([]);
  });

  it('are skipped only with a stated reason, and the skips are counted', () => {
    const shell = documents.flatMap((d) => d.blocks.filter((b) => SHELL_LANGUAGES.has(b.language)));
    const skipped = shell.filter((b) => b.skip !== undefined);
    console.info(
      `docs commands: ${shell.length - skipped.length} blocks run, ${skipped.length} skipped:\n${skipped
        .map((b) => `  ${b.file}:${b.line} (${b.skip})`)
        .join('\n')}`,
    );
    // Skipping is deliberate: a new skip changes this number in the same commit.
    expect(skipped.length).toBe(7);
    expect(shell.length - skipped.length).toBeGreaterThan(skipped.length);
  });
});

/** The lines a bash script reports back; see `scriptOf`. */
const FAILED = /^@@docs-test failed block=(\d+) line=(\d+) status=(\d+)@@$/gm;

/**
 * One file's shell blocks as one bash script, and for each script line the Markdown line it
 * came from (0 for the harness's own lines), so a failure is reported where a writer fixes it.
 */
function scriptOf(document: FileBlocks, base: string): { script: string; origin: number[]; run: DocBlock[] } {
  const lines: string[] = [];
  const origin: number[] = [];
  const harness = (text: string) => {
    lines.push(text);
    origin.push(0);
  };
  harness('set -eE -o pipefail');
  harness('__docs_block=0');
  harness(
    `trap '__docs_status=$?; echo "@@docs-test failed block=$__docs_block line=$LINENO status=$__docs_status@@" >&2' ERR`,
  );
  // Any 4xx or 5xx fails the block (with the problem details printed); a stream that never
  // ends fails after 30 s instead of holding the suite.
  // `|| return`: the failure is the caller's line, which the ERR trap then reports.
  harness('curl() { command curl --fail-with-body --max-time 30 "$@" || return; }');
  if (document.file !== 'README.md') {
    harness(
      `H=(-H "Authorization: Bearer $TOKEN" -H "X-Workspace-ID: $WS" -H 'Content-Type: application/json')`,
    );
  }
  const run = document.blocks.filter((b) => SHELL_LANGUAGES.has(b.language) && b.skip === undefined);
  run.forEach((block, index) => {
    harness(`__docs_block=${index}`);
    harness(`echo "@@docs-test block ${index}@@"; echo "@@docs-test block ${index}@@" >&2`);
    commandLines(block).forEach((text, offset) => {
      lines.push(text.replaceAll(`http://${DOCUMENTED_ADDRESS}`, base).replaceAll(DOCUMENTED_ADDRESS, base));
      origin.push(block.line + 1 + offset);
    });
  });
  harness('echo "@@docs-test done@@"');
  return { script: `${lines.join('\n')}\n`, origin, run };
}

/** What the reader has in the folder they run the examples from (a clone, plus their own files). */
function readerFolder(): string {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-platform-docs-'));
  for (const entry of fs.readdirSync(root)) {
    if (entry === 'data' || entry === '.git') continue;
    fs.symlinkSync(path.join(root, entry), path.join(folder, entry));
  }
  // The files the examples upload: a document and a code archive.
  fs.copyFileSync(path.join(root, 'tests/fixtures/knowledge/guide.pdf'), path.join(folder, 'guide.pdf'));
  fs.writeFileSync(path.join(folder, 'shop.zip'), buildZip(sampleZipEntries()));
  return folder;
}

/** The operator's server-side folder for one tenant: what docs/codegraph.md and knowledge.md name. */
function provisionSourcesRoot(sourcesRoot: string, tenantId: string): void {
  const tenant = path.join(sourcesRoot, tenantId);
  for (const [file, text] of Object.entries(SAMPLE_PROJECT)) {
    fs.mkdirSync(path.dirname(path.join(tenant, 'shop', file)), { recursive: true });
    fs.writeFileSync(path.join(tenant, 'shop', file), text);
  }
  fs.mkdirSync(path.join(tenant, 'handbook', 'drafts'), { recursive: true });
  fs.copyFileSync(
    path.join(root, 'tests/fixtures/knowledge/guide.md'),
    path.join(tenant, 'handbook', 'guide.md'),
  );
  fs.writeFileSync(path.join(tenant, 'handbook', 'drafts', 'next.md'), '# Not yet\n');
}

function runProcess(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<{ code: number | null; stdout: string; stderr: string; timedOut: boolean }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, detached: true });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => {
      timedOut = true;
      // The whole process group: bash and whatever command it is waiting on.
      if (child.pid) process.kill(-child.pid, 'SIGKILL');
    }, options.timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, timedOut });
    });
    // Nothing to read: a command that reads its standard input gets end of file at once.
    child.stdin.end();
  });
}

/** The part of a captured stream that one block printed. */
const outputOf = (text: string, index: number): string =>
  text.split(`@@docs-test block ${index}@@\n`)[1]?.split(/@@docs-test (?:block \d+|done)@@\n/)[0] ?? '';

describe('the commands of README.md and docs/ run as written', () => {
  let env: TestDatabaseEnv;
  let service: ChildProcess | undefined;
  let serviceLog = '';
  let base = '';
  let folder = '';
  let sourcesRoot = '';
  const scripts = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-platform-docs-scripts-'));
  let readerEnv: NodeJS.ProcessEnv = {};

  beforeAll(async () => {
    env = await createTestDatabaseEnv();
    sourcesRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-platform-docs-sources-'));
    const serviceEnv: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      ...env.env,
      HOST: '127.0.0.1',
      PORT: '0',
      LOG_LEVEL: 'info',
      SOURCES_ROOT: sourcesRoot,
    };
    service = spawn(process.execPath, ['--max-semi-space-size=8', 'src/main.ts'], {
      cwd: root,
      env: serviceEnv,
    });
    service.stdout?.on('data', (chunk) => {
      serviceLog += chunk;
    });
    service.stderr?.on('data', (chunk) => {
      serviceLog += chunk;
    });
    const deadline = Date.now() + 90_000;
    while (!base) {
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(serviceLog);
      if (match) base = match[1] as string;
      else if (service.exitCode !== null || Date.now() > deadline)
        throw new Error(`the service did not start:\n${serviceLog.slice(-4000)}`);
      else await new Promise((resolve) => setTimeout(resolve, 100));
    }

    folder = readerFolder();
    // A clean environment: what a reader's shell has after the README's set-up, pointed at the
    // service's database (`npm run dev-token` must use the service's DATA_DIR and POSTGRES_*).
    readerEnv = {
      PATH: `${path.join(root, 'node_modules/.bin')}:${process.env.PATH}`,
      HOME: folder,
      LANG: 'C.UTF-8',
      ...env.env,
    };
    // The docs files start where the README's First requests leave a reader: `$TOKEN` and `$WS`
    // of the development owner (the README's own blocks mint theirs with `npm run dev-token`).
    const config = loadConfig(env.env);
    if (config.auth.mode !== 'dev') throw new Error('the docs examples use the development issuer');
    const identity = readDevIdentity(config.dataDir);
    if (!identity) throw new Error('the service made no development identity');
    const token = await mintDevToken(await loadDevSigningKey(config.dataDir), {
      userId: identity.user_id,
      issuer: config.auth.issuer,
      audience: config.auth.audience,
    });
    readerEnv = { ...readerEnv, TOKEN: token, WS: identity.workspace_id };
    const current = await fetch(`${base}/api/workspaces/current`, {
      headers: { authorization: `Bearer ${token}`, 'x-workspace-id': identity.workspace_id },
    });
    expect(current.status).toBe(200);
    provisionSourcesRoot(sourcesRoot, ((await current.json()) as { tenant: { id: string } }).tenant.id);
  });

  afterAll(async () => {
    if (service && service.exitCode === null) {
      const exited = new Promise((resolve) => service?.once('exit', resolve));
      service.kill('SIGTERM');
      const stuck = setTimeout(() => service?.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(stuck);
    }
    for (const dir of [folder, sourcesRoot, scripts])
      if (dir) fs.rmSync(dir, { recursive: true, force: true });
    await env?.drop();
  });

  /**
   * Runs one file's shell blocks; undefined when they all succeed, else the report of the first
   * failure: its file and line, the block's line, its status and what it printed.
   */
  async function runDocument(document: FileBlocks): Promise<string | undefined> {
    const { script, origin, run } = scriptOf(document, base);
    // A file, not bash's standard input, which a command of the examples could otherwise read.
    const file = path.join(scripts, `${document.file.replaceAll('/', '-')}.sh`);
    fs.writeFileSync(file, script);
    const result = await runProcess('bash', [file], {
      cwd: folder,
      env: readerEnv,
      timeoutMs: FILE_TIMEOUT_MS,
    });
    if (process.env.DOCS_TEST_TRANSCRIPT) console.info(result.stdout, result.stderr);
    if (result.code === 0 && result.stdout.includes('@@docs-test done@@')) return undefined;

    // Name the block and, where bash told us (its ERR trap, or its own `<script>: line N:` for a
    // syntax error or a missing command), the Markdown line of the command that failed.
    const failures = [...result.stderr.matchAll(FAILED)];
    const reported = [
      ...failures.map((f) => Number(f[2])),
      ...[...result.stderr.split('\n')]
        .filter((text) => text.startsWith(`${file}: line `))
        .map((text) => Number(/: line (\d+):/.exec(text)?.[1])),
    ];
    const line = reported.map((n) => origin[n - 1] ?? 0).find((l) => l > 0);
    const reached = Math.max([...result.stdout.matchAll(/@@docs-test block (\d+)@@/g)].length - 1, 0);
    const index = line === undefined ? reached : run.findLastIndex((b) => b.line < line);
    const block = run[index] as DocBlock;
    const status = failures.at(-1)?.[3] ?? String(result.code);
    return [
      `${document.file}:${line ?? block.line}: the block at line ${block.line} ${
        result.timedOut ? `did not finish within ${FILE_TIMEOUT_MS / 1000} s` : `exited with status ${status}`
      }`,
      `--- stdout\n${outputOf(result.stdout, index).slice(-3000)}`,
      `--- stderr\n${outputOf(result.stderr, index).replace(FAILED, '').slice(-3000)}`,
    ].join('\n');
  }

  it('fails an example answered 4xx, or a failing command, naming its file and line', async () => {
    const markdown = [
      '# Broken',
      '',
      '```sh',
      `curl -s "\${H[@]}" localhost:8080/api/agents?limit=1`,
      '```',
      '',
      '```sh',
      'echo before',
      `curl -s "\${H[@]}" localhost:8080/api/agents/00000000-0000-4000-8000-000000000000`,
      'echo never',
      '```',
    ].join('\n');
    const { blocks } = extractBlocks('broken.md', markdown);
    const report = await runDocument({ file: 'broken.md', blocks });
    expect(report).toMatch(/^broken\.md:9: the block at line 7 exited with status 22\n/);
    expect(report).toContain('agent_not_found');
    expect(report).toContain('before');
    expect(report).not.toContain('never');

    const failing = extractBlocks('failing.md', '```bash\nX=$(false | cat)\necho "$X"\n```\n').blocks;
    expect(await runDocument({ file: 'failing.md', blocks: failing })).toMatch(/^failing\.md:2: /);
    const syntax = extractBlocks('syntax.md', '```sh\necho ok\nfi\n```\n').blocks;
    expect(await runDocument({ file: 'syntax.md', blocks: syntax })).toMatch(/^syntax\.md:3: /);
  });

  for (const document of documents) {
    const runnable = document.blocks.filter((b) => SHELL_LANGUAGES.has(b.language) && b.skip === undefined);
    const name = `${document.file} (${runnable.length} blocks)`;
    it.skipIf(runnable.length === 0)(name, { timeout: FILE_TIMEOUT_MS + 10_000 }, async () => {
      const report = await runDocument(document);
      if (report !== undefined) expect.fail(report);
    });
  }
});
