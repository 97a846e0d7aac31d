import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  assemblePolicy,
  canonicalJson,
  checkContent,
  MissingVariableError,
  type PolicyContent,
  placeholders,
} from './assemble.ts';

const policy: PolicyContent = {
  sections: [
    { name: 'greeting', kind: 'context', text: 'Hello {{ customer }}, plan {{variables.plan}}.' },
    { name: 'persona', kind: 'persona', text: 'You are precise.' },
    { name: 'eu', kind: 'rules', text: 'Follow the GDPR.', when: 'context.region == "eu"' },
    { name: 'rules', kind: 'rules', text: 'Cite sources.' },
    { name: 'shot', kind: 'examples', role: 'assistant', text: 'Sure, {{customer}}.' },
  ],
  variables: { customer: { required: true }, plan: { default: 'free' } },
  token_budget: 500,
};

describe('assemblePolicy', () => {
  it('renders a snapshot: static first, conditions, substitutions', () => {
    const result = assemblePolicy(policy, {
      variables: { customer: 'Ann' },
      context: { region: 'eu' },
      conversation_id: 'c1',
    });
    expect(result).toMatchInlineSnapshot(`
      {
        "messages": [
          {
            "content": "You are precise.

      Cite sources.

      Hello Ann, plan free.

      Follow the GDPR.",
            "role": "system",
          },
          {
            "content": "Sure, Ann.",
            "role": "assistant",
          },
        ],
        "sections": [
          {
            "included": true,
            "kind": "persona",
            "name": "persona",
            "reason": "always",
            "role": "system",
            "static": true,
            "tokens": 4,
          },
          {
            "included": true,
            "kind": "rules",
            "name": "rules",
            "reason": "always",
            "role": "system",
            "static": true,
            "tokens": 4,
          },
          {
            "included": true,
            "kind": "context",
            "name": "greeting",
            "reason": "always",
            "role": "system",
            "static": false,
            "tokens": 6,
          },
          {
            "included": true,
            "kind": "rules",
            "name": "eu",
            "reason": "condition_true",
            "role": "system",
            "static": false,
            "tokens": 4,
          },
          {
            "included": true,
            "kind": "examples",
            "name": "shot",
            "reason": "always",
            "role": "assistant",
            "static": false,
            "tokens": 3,
          },
        ],
        "tokens": {
          "budget": 500,
          "total": 21,
          "truncated": [],
        },
        "unresolved_variables": [],
      }
    `);
  });

  it('throws MissingVariableError naming every missing required variable', () => {
    expect(() => assemblePolicy(policy, {})).toThrow(MissingVariableError);
    try {
      assemblePolicy(policy, { variables: { customer: '' } });
    } catch (error) {
      expect((error as MissingVariableError).names).toEqual(['customer']);
    }
  });

  it('substitutes text only: a value that looks like a placeholder or code is not evaluated', () => {
    const result = assemblePolicy(policy, { variables: { customer: '{{plan}} <% process.exit() %>' } });
    expect(result.messages[0]?.content).toContain('Hello {{plan}} <% process.exit() %>, plan free.');
  });

  it('reads only own values: a name every object has is unresolved, not rendered', () => {
    const result = assemblePolicy(
      {
        sections: [
          { name: 's', kind: 'context', text: 'A {{constructor}} B {{toString}} C {{x.constructor}}' },
        ],
        variables: {},
        token_budget: 500,
      },
      { variables: { x: 'y' } },
    );
    expect(result.messages[0]?.content).toBe('A  B  C ');
    expect(result.unresolved_variables).toEqual(['constructor', 'toString', 'x.constructor']);
    const given = assemblePolicy(
      {
        sections: [{ name: 's', kind: 'context', text: '{{constructor}}' }],
        variables: {},
        token_budget: 500,
      },
      { variables: { constructor: 'own value' } },
    );
    expect(given.messages[0]?.content).toBe('own value');
  });

  it('is deterministic and keeps static sections before dynamic ones (property)', () => {
    const section = fc.record({
      name: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f'),
      kind: fc.constantFrom('instructions', 'persona', 'rules', 'examples', 'context'),
      text: fc.oneof(fc.string({ maxLength: 40 }), fc.constant('value {{v}}')),
      when: fc.option(fc.constantFrom('x == 1', 'x exists', 'not x == 2'), { nil: undefined }),
    });
    fc.assert(
      fc.property(
        fc.uniqueArray(section, { selector: (s) => s.name, minLength: 1, maxLength: 6 }),
        fc.dictionary(fc.constantFrom('v', 'w'), fc.string({ maxLength: 10 })),
        fc.option(fc.integer({ min: 1, max: 40 }), { nil: undefined }),
        fc.integer({ min: 0, max: 3 }),
        (sections, variables, budget, x) => {
          const content = {
            sections: sections.map((s) => (s.when === undefined ? { ...s, when: undefined } : s)),
            ...(budget ? { token_budget: budget } : {}),
          } as PolicyContent;
          expect(checkContent(content)).toEqual([]);
          const input = { variables, context: { x } };
          const first = assemblePolicy(content, input);
          expect(canonicalJson(assemblePolicy(content, input))).toBe(canonicalJson(first));
          const firstDynamic = first.sections.findIndex((s) => !s.static);
          if (firstDynamic >= 0)
            expect(first.sections.slice(firstDynamic).every((s) => !s.static)).toBe(true);
          expect(first.sections).toHaveLength(sections.length);
          const included = first.sections.filter((s) => s.included).reduce((sum, s) => sum + s.tokens, 0);
          expect(first.tokens.total).toBe(included);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('finds placeholders, with or without the variables. prefix', () => {
    expect(placeholders('{{a}} {{ variables.b }} {{a}} {{c.d}}')).toEqual(['a', 'b', 'c.d']);
  });

  it('names conditions that do not parse and repeated names', () => {
    expect(
      checkContent({
        sections: [
          { name: 'a', kind: 'rules', text: '', when: 'x ==' },
          { name: 'a', kind: 'rules', text: '' },
        ],
      }).map((p) => p.field),
    ).toEqual(['body.sections.0.when', 'body.sections.1.name']);
  });
});
