import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildZip, sampleZipEntries } from '../helpers/archives.ts';
import {
  type ConsoleHarness,
  expectAccessible,
  navigate,
  overflowingElements,
  screenshot as shot,
  signIn,
  startConsole,
} from '../helpers/console.ts';
import { buildMember, configureLoopbackModel } from '../helpers/factories.ts';
import { type LlmServer, startOpenAiServer } from '../helpers/llm-servers.ts';

/**
 * The console's Knowledge pages: a source created with embeddings from a loopback
 * OpenAI-compatible server, a Markdown file uploaded through the file input and followed to
 * `processed`, found by a hybrid search showing its keyword and vector scores, and a code
 * project indexed from an uploaded archive and searched.
 */

let harness: ConsoleHarness;
let llm: LlmServer;
beforeAll(async () => {
  harness = await startConsole({ env: { VAULT_ALLOW_LOOPBACK: 'true' } });
  llm = await startOpenAiServer();
  const { t } = harness;
  await configureLoopbackModel(t, t.owner, llm.url);
});
afterAll(async () => {
  await harness?.close();
  await llm?.close();
});

const NOTES = `# Tide pools

Tide pools are rocky hollows that the sea refills twice a day.

## Who lives there

Sea anemones, hermit crabs and periwinkle snails share the shallow water.
`;

describe('the knowledge pages', () => {
  it('creates a source, uploads a document, follows it to processed and finds it by search', async () => {
    const context = await harness.context();
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await signIn(page);
    await navigate(page, 'Knowledge');
    await expect
      .poll(() => page.getByRole('heading', { level: 1, name: 'Knowledge' }).isVisible())
      .toBe(true);
    const tabs = page.getByRole('navigation', { name: 'Knowledge' });
    await expect.poll(() => page.getByText(/No sources yet/).isVisible()).toBe(true);
    await expectAccessible(page);

    // A source searched by keywords and by the loopback provider's embeddings.
    await page.getByRole('button', { name: 'New source' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Field notes');
    await page.getByLabel('Embedding provider', { exact: true }).fill('loop');
    await page.getByLabel('Embedding model', { exact: true }).fill('embed-small');
    await expectAccessible(page);
    await page.getByRole('button', { name: 'Create source' }).click();
    const sources = page.getByRole('table', { name: 'Sources' });
    await expect.poll(() => sources.textContent()).toContain('loop / embed-small');

    // A second one, deleted after asking.
    await page.getByRole('button', { name: 'New source' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Scratch');
    await page.getByRole('button', { name: 'Create source' }).click();
    await expect.poll(() => sources.textContent()).toContain('Scratch');
    await page.getByRole('button', { name: 'Delete Scratch' }).click();
    await page.getByRole('button', { name: 'Delete source' }).click();
    await expect.poll(() => sources.textContent()).not.toContain('Scratch');

    // Upload through the file input (the keyboard's way to the drop zone), into Field notes.
    await tabs.getByRole('link', { name: 'Documents' }).click();
    await expect.poll(() => page.getByText('No documents yet. Upload one above.').isVisible()).toBe(true);
    await page.getByLabel('Upload to', { exact: true }).selectOption({ label: 'Field notes' });
    await page.getByLabel('Tags', { exact: true }).fill('ocean, guide');
    await page.getByLabel('Files to upload', { exact: true }).setInputFiles({
      name: 'tide-pools.md',
      mimeType: 'text/markdown',
      buffer: Buffer.from(NOTES),
    });
    const uploads = page.getByRole('list', { name: 'Uploads' });
    await expect.poll(() => uploads.textContent()).toMatch(/tide-pools\.md.*(Uploaded, processing)/);
    expect(
      await page.getByRole('progressbar', { name: 'Upload of tide-pools.md' }).getAttribute('value'),
    ).toBe('1');
    // Followed live to processed, without a reload.
    const documents = page.getByRole('table', { name: 'Documents' });
    await expect.poll(() => documents.textContent(), { timeout: 30_000 }).toContain('processed');
    expect(await documents.textContent()).toContain('ocean, guide');
    expect(await documents.textContent()).toContain('Field notes');
    expect(llm.embeddingRequests().length).toBeGreaterThan(0);

    // Dropped on the drop zone, as from a file manager (runs in the page: DOM types).
    const dropped = await page.evaluateHandle(() => {
      const { DataTransfer, File } = globalThis as any;
      const transfer = new DataTransfer();
      transfer.items.add(new File(['Kelp forests grow in cold water.'], 'kelp.txt', { type: 'text/plain' }));
      return transfer;
    });
    await page
      .getByRole('group', { name: 'Drop files here' })
      .dispatchEvent('drop', { dataTransfer: dropped });
    await expect.poll(() => uploads.textContent()).toMatch(/kelp\.txt.*(Uploaded, processing)/);
    await expect
      .poll(() => documents.getByRole('row').filter({ hasText: 'kelp.txt' }).textContent(), {
        timeout: 30_000,
      })
      .toContain('processed');
    await expectAccessible(page);
    await shot(page, 'knowledge-light');
    await page.setViewportSize({ width: 390, height: 844 });
    await expect.poll(() => overflowingElements(page)).toEqual([]);
    await page.setViewportSize({ width: 1280, height: 900 });

    // Found by search: the passage, the score and its parts, the source and the tags.
    await tabs.getByRole('link', { name: 'Search' }).click();
    const searches: string[] = [];
    page.on('request', (request) => {
      if (new URL(request.url()).pathname === '/api/documents/search') searches.push(request.method());
    });
    await page.getByLabel('Query', { exact: true }).fill('hermit crabs');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    const results = page.getByRole('list', { name: 'Search results' });
    // The vector arm finds every document somewhat similar; the one with the words ranks first.
    const hit = results.getByRole('article').first();
    await expect.poll(() => hit.getByRole('heading').textContent()).toBe('Tide pools');
    const text = (await hit.textContent()) ?? '';
    expect(text).toContain('hermit crabs and periwinkle snails');
    expect(text).toContain('Field notes');
    expect(text).toContain('tags: ocean, guide');
    expect(text).toMatch(/Score \(hybrid\)\d\.\d{4}/);
    expect(text).toMatch(/Keyword \(BM25\)\d+\.\d{3}/);
    expect(text).toMatch(/Vector \(cosine\)-?\d\.\d{3}/);
    // The parts come with the hybrid search's own answer: one request, not one per arm.
    expect(searches).toEqual(['POST']);
    await expectAccessible(page);
    await shot(page, 'knowledge-search-light');
    expect(errors).toEqual([]);
    await context.close();
  });

  it('indexes a code project from an uploaded archive and searches its symbols', async () => {
    const context = await harness.context();
    const page = await context.newPage();
    await signIn(page, '/knowledge/code');
    await expect.poll(() => page.getByText('No code projects yet.').isVisible()).toBe(true);
    await page.getByLabel('Project name', { exact: true }).fill('sample');
    await page.getByLabel('Archive', { exact: true }).setInputFiles({
      name: 'sample.zip',
      mimeType: 'application/zip',
      buffer: buildZip(sampleZipEntries()),
    });
    await page.getByRole('button', { name: 'Index project' }).click();
    const projects = page.getByRole('table', { name: 'Code projects' });
    await expect.poll(() => projects.textContent(), { timeout: 30_000 }).toContain('ready');
    expect(await projects.textContent()).toContain('sample.zip');
    await page.getByLabel('Symbol', { exact: true }).fill('add');
    await page.getByRole('button', { name: 'Search symbols' }).click();
    const symbols = page.getByRole('list', { name: 'Symbols' });
    await expect.poll(() => symbols.textContent()).toContain('exact match');
    expect(await symbols.textContent()).toContain('1 caller(s)');
    await expectAccessible(page);
    await shot(page, 'knowledge-code-light');
    await context.close();
  });

  it('offers a viewer reading and searching only, and says so', async () => {
    const viewer = await buildMember(harness.t, harness.t.owner, { role: 'viewer' });
    const context = await harness.context();
    const page = await context.newPage();
    // Signed in with the viewer's token (as signIn's token path does; its label lookup also
    // matches the form named after it).
    await page.goto('/knowledge/documents');
    await page.getByRole('textbox', { name: 'Access token' }).fill(viewer.token);
    await page.getByRole('button', { name: 'Sign in with token' }).click();
    await expect
      .poll(() => page.getByText(/uploading and deleting them needs the member role/).isVisible())
      .toBe(true);
    expect(await page.getByLabel('Files to upload').count()).toBe(0);
    expect(await page.getByRole('button', { name: /^Delete / }).count()).toBe(0);
    await page.getByRole('navigation', { name: 'Knowledge' }).getByRole('link', { name: 'Sources' }).click();
    await expect
      .poll(() => page.getByText(/creating, indexing and deleting them needs the member role/).isVisible())
      .toBe(true);
    expect(await page.getByRole('button', { name: 'New source' }).count()).toBe(0);
    await context.close();
  });
});
