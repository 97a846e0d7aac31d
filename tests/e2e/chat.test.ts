import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ConsoleHarness,
  expectAccessible,
  navigate,
  overflowingElements,
  screenshot as shot,
  signIn,
  startConsole,
} from '../helpers/console.ts';
import { buildAgent, configureLoopbackModel } from '../helpers/factories.ts';
import { settledDocument, upload } from '../helpers/knowledge.ts';
import { type LlmServer, startOpenAiServer } from '../helpers/llm-servers.ts';

/**
 * The console's Chat page against a loopback OpenAI-compatible server that streams its answer
 * in chunks: the answer grows on the page before it is complete, the conversation joins the
 * list, and Stop aborts an answer (the model's connection is closed).
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

describe('the chat page', () => {
  it('streams an answer token by token, lists the new conversation, and shows its history', async () => {
    await buildAgent(harness.t, harness.t.owner, {
      name: 'Tide expert',
      model: { provider: 'loop', name: 'agent-model' },
    });
    const chunks = ['Tide ', 'pools ', 'are ', 'rocky ', 'hollows ', 'the ', 'sea ', 'refills.'];
    llm.reply({ type: 'text', text: chunks, chunkDelayMs: 250 });
    const context = await harness.context();
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await signIn(page);
    await navigate(page, 'Chat');
    await expect.poll(() => page.getByRole('heading', { level: 1, name: 'Chat' }).isVisible()).toBe(true);
    await expect.poll(() => page.getByText('No conversations yet.').isVisible()).toBe(true);
    await expectAccessible(page);
    await page.getByLabel('Agent', { exact: true }).selectOption({ label: 'Tide expert' });
    await page.getByLabel('Message', { exact: true }).fill('What is a tide pool?');
    await page.getByRole('button', { name: 'Send', exact: true }).click();

    // While it streams: Stop is offered, and the answer grows before it is complete.
    const answer = page.getByRole('article', { name: 'Answer' });
    await expect.poll(() => page.getByRole('button', { name: 'Stop' }).isEnabled()).toBe(true);
    await expect.poll(async () => (await answer.textContent()) ?? '').toContain('Tide pools');
    const partial = (await answer.textContent()) ?? '';
    expect(partial).not.toContain('refills.');

    // Done: the history (read back from the API) shows both messages, with the model.
    const messages = page.getByRole('list', { name: 'Messages' });
    await expect
      .poll(() => messages.textContent(), { timeout: 20_000 })
      .toContain('Tide pools are rocky hollows the sea refills.');
    await expect.poll(() => page.url()).toMatch(/\/chat\/[0-9a-f-]{36}$/);
    await expect.poll(() => messages.textContent()).toContain('loop / agent-model');
    await expect.poll(() => page.getByRole('link', { name: 'Tide expert' }).isVisible()).toBe(true);
    expect(await page.getByRole('button', { name: 'Stop' }).isDisabled()).toBe(true);
    const list = page.getByRole('navigation', { name: 'Conversations' });
    await expect.poll(() => list.getByRole('link', { name: 'What is a tide pool?' }).isVisible()).toBe(true);
    // The agent picked for the new conversation answered, with its own model.
    const request = llm.modelRequests().at(-1);
    expect(request?.body.model).toBe('agent-model');
    expect(JSON.stringify(request?.body.messages)).toContain('What is a tide pool?');
    await expectAccessible(page);
    await shot(page, 'chat-light');

    // The conversation continues in place.
    llm.reply({ type: 'text', text: ['Crabs, ', 'anemones ', 'and snails.'] });
    await page.getByLabel('Message', { exact: true }).fill('What lives there?');
    await page.getByLabel('Message', { exact: true }).press('Control+Enter');
    await expect
      .poll(() => messages.textContent(), { timeout: 20_000 })
      .toContain('Crabs, anemones and snails.');
    // Still one conversation, titled by its first message.
    expect(await list.getByRole('listitem').count()).toBe(1);
    expect(errors).toEqual([]);
    await context.close();
  });

  it('stops an answer with the Stop button: the model call is aborted and the answer kept as stopped', async () => {
    llm.reset();
    llm.reply({ type: 'text', text: ['Once ', 'upon ', 'a ', 'time'], chunkDelayMs: 200, holdOpen: true });
    const context = await harness.context({ colorScheme: 'dark' });
    const page = await context.newPage();
    await signIn(page, '/chat');
    await page.getByLabel('Message', { exact: true }).fill('Tell me a long story');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    const answer = page.getByRole('article', { name: 'Answer' });
    await expect.poll(async () => (await answer.textContent()) ?? '').toContain('Once upon');
    await page.getByRole('button', { name: 'Stop' }).click();
    const [request] = await llm.waitForModelRequests(1);
    await expect.poll(() => request?.closedEarly).toBe(true);
    // The stored answer says it was aborted, and a new message can be sent.
    const messages = page.getByRole('list', { name: 'Messages' });
    await expect
      .poll(() => messages.textContent(), { timeout: 20_000 })
      .toContain('Stopped: the answer was ended before it was complete.');
    expect(await page.getByRole('button', { name: 'Send', exact: true }).isEnabled()).toBe(true);
    await expectAccessible(page);
    await shot(page, 'chat-dark');
    // On a phone-sized screen the list sits above the conversation; nothing sticks out.
    await page.setViewportSize({ width: 390, height: 844 });
    await expect.poll(() => overflowingElements(page)).toEqual([]);
    await expectAccessible(page);
    await context.close();
  });

  it('shows an agent’s tool calls and the knowledge passages an answer cites, inline', async () => {
    const { t } = harness;
    llm.reset();
    await buildAgent(t, t.owner, {
      name: 'Librarian',
      model: { provider: 'loop', name: 'agent-model' },
      tools: [{ name: 'knowledge_search' }],
    });
    llm.reply(
      { type: 'tool_calls', calls: [{ id: 'call_k', name: 'knowledge_search', input: { query: 'kelp' } }] },
      { type: 'text', text: ['The library ', 'has nothing on kelp.'] },
    );
    const context = await harness.context();
    const page = await context.newPage();
    await signIn(page, '/chat');
    await page.getByLabel('Agent', { exact: true }).selectOption({ label: 'Librarian' });
    await page.getByLabel('Message', { exact: true }).fill('Anything on kelp?');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    const messages = page.getByRole('list', { name: 'Messages' });
    await expect
      .poll(() => messages.textContent(), { timeout: 20_000 })
      .toContain('The library has nothing on kelp.');
    const calls = messages.getByRole('list', { name: 'Tool calls' });
    expect(await calls.textContent()).toContain('Tool knowledge_search');
    await calls.getByText('Tool knowledge_search').click();
    expect(await calls.textContent()).toContain('"query": "kelp"');

    // In a workspace with no model provider, the built-in local provider quotes the knowledge.
    const glaciers = await t.newWorkspace(t.owner.userId);
    const guide = await upload(t, glaciers, {
      name: 'glacier-guide.md',
      content:
        '# Glacier field guide\n\n## Crevasse rescue\n\nA pulley system lifts a climber out of a crevasse; anchor it with a buried axe.\n',
    });
    expect(guide.statusCode, guide.body).toBe(201);
    expect((await settledDocument(t, glaciers, guide.json().id)).status).toBe('processed');
    await page.reload();
    await page
      .getByLabel('Workspace', { exact: true })
      .selectOption({ label: `${t.owner.userId} workspace` });
    await navigate(page, 'Chat');
    await expect.poll(() => page.getByText('No conversations yet.').isVisible()).toBe(true);
    await page.getByLabel('Message', { exact: true }).fill('How do I rescue someone from a crevasse?');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    const cited = page.getByRole('list', { name: 'Sources cited' });
    await expect.poll(() => cited.textContent(), { timeout: 20_000 }).toContain('[1] Glacier field guide');
    expect(await cited.textContent()).toContain('Crevasse rescue');
    await expectAccessible(page);
    await context.close();
  });
});
