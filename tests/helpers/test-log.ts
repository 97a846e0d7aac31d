import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/logger.ts';

/** A logger whose lines the test can read, parsed, as the service's policy writes them. */
export function captureLog(level = 'debug'): {
  log: Logger;
  lines: Record<string, unknown>[];
  text(): string;
} {
  const lines: Record<string, unknown>[] = [];
  let raw = '';
  const stream = new Writable({
    write(chunk, _encoding, done) {
      raw += chunk.toString();
      for (const line of chunk.toString().split('\n')) if (line.trim()) lines.push(JSON.parse(line));
      done();
    },
  });
  return { log: createLogger(level, stream), lines, text: () => raw };
}
