import { describe, expect, it } from 'vitest';
import { type RememberedMessage, selectMemory } from './chat-memory.ts';

/** A message of `tokens` estimated tokens (four characters each). */
const message = (role: 'user' | 'assistant', tokens: number, mark: string = role): RememberedMessage => ({
  role,
  content: `${mark}:`.padEnd(tokens * 4, 'x'),
});

describe('selectMemory', () => {
  it('keeps everything that fits, in conversation order', () => {
    const history = [message('user', 10), message('assistant', 10), message('user', 10)];
    expect(selectMemory(history, 30)).toEqual(history);
  });

  it('drops the oldest messages first when the budget is exceeded', () => {
    const history = [
      message('user', 10, 'a'),
      message('assistant', 10, 'b'),
      message('user', 10, 'c'),
      message('assistant', 10, 'd'),
    ];
    expect(selectMemory(history, 25).map((m) => m.content[0])).toEqual(['c', 'd']);
    expect(selectMemory(history, 9)).toEqual([]);
  });

  it('starts with a user message: an answer whose question was dropped goes too', () => {
    const history = [message('user', 50, 'a'), message('assistant', 1, 'b'), message('user', 10, 'c')];
    expect(selectMemory(history, 20).map((m) => m.content[0])).toEqual(['c']);
  });

  it('stops at the first message that does not fit instead of skipping over it', () => {
    const history = [message('user', 1, 'a'), message('assistant', 50, 'b'), message('user', 10, 'c')];
    expect(selectMemory(history, 20).map((m) => m.content[0])).toEqual(['c']);
  });

  it('leaves out empty messages without counting them', () => {
    const history = [
      message('user', 5, 'a'),
      { role: 'assistant' as const, content: '' },
      message('user', 5, 'c'),
    ];
    expect(selectMemory(history, 10).map((m) => m.content[0])).toEqual(['a', 'c']);
  });
});
