/**
 * `npm run bench:model-call`: what one model call costs in CPU, the floor under the run
 * engine's throughput. Every run calls its model at least once; this measures that call alone,
 * with nothing of the platform around it, on the loopback OpenAI-compatible server the runs
 * bench uses (tests/helpers/llm-servers.ts, here in a child process so its CPU is counted apart).
 *
 * Clients, side by side, each making BENCH_CALLS calls (default 3000), BENCH_CONCURRENCY (10)
 * at a time, after 300 calls of warm-up:
 *
 * - `fetch`: Node's fetch posting the request and reading the streamed answer as text (the
 *   HTTP alone, the least any client can do);
 * - `AI SDK streamText`: the Vercel AI SDK with `@ai-sdk/openai-compatible`, reading
 *   `fullStream` to its end, as the platform's gateway does (src/modules/providers/ai-gateway.ts);
 * - `AI SDK generateText`: the same without streaming.
 *
 * Figures: calls per second, and CPU milliseconds per call of the client process and of the
 * server process (`process.cpuUsage`, read by each process itself).
 */
import { fork } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, streamText } from 'ai';

const CALLS = Number(process.env.BENCH_CALLS ?? 3000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 10);
const WARMUP = 300;

if (process.argv[2] === 'server') {
  // The child: the loopback model, answering at once; says its URL and, when asked, its CPU.
  const { startOpenAiServer } = await import('../tests/helpers/llm-servers.ts');
  const llm = await startOpenAiServer();
  llm.fallbackReply = { type: 'text', text: 'done', usage: { input_tokens: 12, output_tokens: 3 } };
  // Requests are kept by the helper for tests' assertions: forget them as calls come in.
  setInterval(() => llm.reset(), 1000).unref();
  process.on('message', (message) => {
    if (message === 'cpu') process.send?.({ cpu: process.cpuUsage() });
    if (message === 'stop') void llm.close().then(() => process.exit(0));
  });
  process.send?.({ url: llm.url });
} else {
  await main();
}

async function main(): Promise<void> {
  const server = fork(path.join(import.meta.dirname, 'model-call.bench.ts'), ['server'], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const ask = <T>(message: string | undefined): Promise<T> =>
    new Promise((resolve) => {
      server.once('message', (answer) => resolve(answer as T));
      if (message) server.send(message);
    });
  const { url } = await ask<{ url: string }>(undefined);
  const serverCpu = async () => {
    const { cpu } = await ask<{ cpu: NodeJS.CpuUsage }>('cpu');
    return (cpu.user + cpu.system) / 1000;
  };
  const model = createOpenAICompatible({ name: 'loop', baseURL: url, includeUsage: true }).chatModel(
    'model-a',
  );
  const messages = [{ role: 'user' as const, content: 'Goal: Do the thing' }];

  const clients: [string, () => Promise<unknown>][] = [
    [
      'fetch',
      async () => {
        const response = await fetch(`${url}/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            model: 'model-a',
            messages,
            stream: true,
            stream_options: { include_usage: true },
          }),
        });
        return response.text();
      },
    ],
    [
      'AI SDK streamText',
      async () => {
        const result = streamText({ model, instructions: 'You are A0.', messages, maxRetries: 0 });
        for await (const _part of result.fullStream) {
          // read to the end, as the gateway does
        }
      },
    ],
    [
      'AI SDK generateText',
      () => generateText({ model, instructions: 'You are A0.', messages, maxRetries: 0 }),
    ],
  ];

  const rows: string[] = [];
  for (const [name, call] of clients) {
    await run(call, WARMUP);
    const clientBefore = process.cpuUsage();
    const serverBefore = await serverCpu();
    const started = performance.now();
    await run(call, CALLS);
    const seconds = (performance.now() - started) / 1000;
    const client = process.cpuUsage(clientBefore);
    const serverMs = (await serverCpu()) - serverBefore;
    const clientMs = (client.user + client.system) / 1000;
    rows.push(
      `| ${name} | ${Math.round(CALLS / seconds).toLocaleString('en-US')} | ${(clientMs / CALLS).toFixed(3)} | ${(serverMs / CALLS).toFixed(3)} | ${((clientMs + serverMs) / CALLS).toFixed(3)} |`,
    );
  }
  server.send('stop');

  console.log(
    `\nnode ${process.version}, ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown'}), load average ${os
      .loadavg()
      .map((n) => n.toFixed(2))
      .join(', ')}; ${CALLS} calls per client, ${CONCURRENCY} at a time\n`,
  );
  console.log('| client | calls/s | client CPU ms per call | server CPU ms per call | both |');
  console.log('|---|---:|---:|---:|---:|');
  for (const row of rows) console.log(row);
}

/** Makes `count` calls, CONCURRENCY at a time. */
async function run(call: () => Promise<unknown>, count: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < count) {
        next += 1;
        await call();
      }
    }),
  );
}
