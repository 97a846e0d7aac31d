import { describe, expect, it } from 'vitest';
import { mapItems, pageOf } from './page.ts';

describe('pageOf', () => {
  const all = ['a', 'b', 'c', 'd', 'e'];

  it('cuts the requested page and counts the whole list', () => {
    expect(pageOf(all, { limit: 2, offset: 1 })).toEqual({
      items: ['b', 'c'],
      total: 5,
      limit: 2,
      offset: 1,
    });
  });

  it('answers a page past the end with no items and the real total', () => {
    expect(pageOf(all, { limit: 2, offset: 9 })).toEqual({ items: [], total: 5, limit: 2, offset: 9 });
  });

  it('answers an empty list', () => {
    expect(pageOf([], { limit: 50, offset: 0 })).toEqual({ items: [], total: 0, limit: 50, offset: 0 });
  });
});

describe('mapItems', () => {
  it('presents each item and keeps the page fields', () => {
    const page = { items: [1, 2], total: 7, limit: 2, offset: 4 };
    expect(mapItems(page, (n) => `#${n}`)).toEqual({ items: ['#1', '#2'], total: 7, limit: 2, offset: 4 });
  });
});
