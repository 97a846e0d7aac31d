import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, jsonSchema, stepCountIs, tool } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LlmServer, startAnthropicServer, startOpenAiServer } from './llm-servers.ts';

/**
 * The loopback servers' non-streaming answers (`stream: false`), read by the AI SDK's own
 * clients: the benchmarks and other tests rely on them speaking the protocols exactly. The
 * streaming answers are exercised by the gateway and chat tests.
 */

let openai: LlmServer;
let anthropic: LlmServer;
beforeAll(async () => {
  [openai, anthropic] = await Promise.all([startOpenAiServer(), startAnthropicServer()]);
});
afterAll(() => Promise.all([openai.close(), anthropic.close()]));

const echo = tool({
  description: 'echo',
  inputSchema: jsonSchema<{ value: string }>({ type: 'object', properties: { value: { type: 'string' } } }),
  execute: async ({ value }) => ({ echoed: value }),
});

describe.each([
  [
    'OpenAI-compatible',
    () => openai,
    () => createOpenAICompatible({ name: 'loop', baseURL: openai.url, apiKey: 'k' }).chatModel('m'),
  ],
  [
    'Anthropic',
    () => anthropic,
    () => createAnthropic({ baseURL: anthropic.url, apiKey: 'k' }).messages('m'),
  ],
] as const)('%s loopback server, non-streaming', (_name, server, model) => {
  it('answers text with usage and a tool call round trip', async () => {
    server().reply(
      {
        type: 'tool_calls',
        calls: [{ name: 'echo', input: { value: 'ping' } }],
        usage: { input_tokens: 5, output_tokens: 1 },
      },
      { type: 'text', text: 'pong', usage: { input_tokens: 9, output_tokens: 2 } },
    );
    const result = await generateText({
      model: model(),
      prompt: 'Say ping',
      tools: { echo },
      stopWhen: stepCountIs(3),
      maxOutputTokens: 256,
      maxRetries: 0,
    });
    expect(result.text).toBe('pong');
    expect(result.steps[0]?.toolResults[0]?.output).toEqual({ echoed: 'ping' });
    expect(result.totalUsage).toMatchObject({ inputTokens: 14, outputTokens: 3 });
    const [first, second] = server().modelRequests().slice(-2);
    expect(first?.body.stream).toBeFalsy();
    expect(JSON.stringify(second?.body.messages)).toContain('ping');
  });

  it('answers a scripted HTTP error as the provider would', async () => {
    server().reply({ type: 'error', status: 429, message: 'slow down' });
    await expect(
      generateText({ model: model(), prompt: 'x', maxOutputTokens: 256, maxRetries: 0 }),
    ).rejects.toMatchObject({
      statusCode: 429,
      message: 'slow down',
    });
  });
});
