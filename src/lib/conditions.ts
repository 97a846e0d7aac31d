/**
 * The condition language: one small, documented, side-effect-free language for rules that
 * decide whether something applies to a run or a chat (playbook attachments today; flags and
 * policy sections are meant to share it). Parsed once, evaluated many times; no regular
 * expressions and no code, so a hostile condition costs at most its bounded size.
 *
 *   goal contains "deploy" and (context.environment == "prod" or inputs.region in ["eu", "us"])
 *   not context.dry_run == true
 *   tags contains "security" or agent startswith "sec"
 *   context.ticket exists
 *
 * Grammar (keywords are lower case; `and` binds tighter than `or`):
 *
 *   expr   := and ("or" and)*
 *   and    := unary ("and" unary)*
 *   unary  := "not" unary | "(" expr ")" | "true" | "false" | test
 *   test   := path "exists" | path op value
 *   op     := "==" | "!=" | "<" | "<=" | ">" | ">=" | "contains" | "in" | "startswith" | "endswith"
 *   value  := string | number | "true" | "false" | "null" | "[" value ("," value)* "]"
 *   path   := name ("." name)*            names: letters, digits, _ and -
 *
 * Semantics: a path reads the facts object (a missing one is `undefined`, and every test on it
 * but `exists` is false). `==`/`!=` compare strings, numbers, booleans and null strictly;
 * `<`..`>=` compare numbers with numbers and strings with strings; `contains` is a case-
 * insensitive substring test on a string, or membership in an array; `in` is membership of the
 * path's value in the literal list; `startswith`/`endswith` are case-insensitive string tests.
 *
 * Cost: a condition is at most `MAX_CONDITION_LENGTH` characters, so it holds a bounded number
 * of tests; each string is lower-cased once per evaluation (`Normaliser`), however many tests
 * and rules read it, and the facts themselves are bounded by whoever accepts them
 * (`MAX_FACTS_BYTES`, checked with `factsTooLarge`), so a hostile rule set over a hostile
 * context costs bounded time.
 */

export type Literal = string | number | boolean | null;
type Value = Literal | Literal[];
export type Op = '==' | '!=' | '<' | '<=' | '>' | '>=' | 'contains' | 'in' | 'startswith' | 'endswith';

export type Condition =
  | { type: 'const'; value: boolean }
  | { type: 'not'; of: Condition }
  | { type: 'and' | 'or'; of: Condition[] }
  | { type: 'exists'; path: string[] }
  | { type: 'test'; path: string[]; op: Op; value: Value };

/** A condition that does not parse: `position` is the character offset of the problem. */
export class ConditionError extends Error {
  readonly position: number;
  constructor(message: string, position: number) {
    super(`${message} at character ${position + 1}`);
    this.name = 'ConditionError';
    this.position = position;
  }
}

export const MAX_CONDITION_LENGTH = 2_000;
/**
 * The largest facts object (as UTF-8 JSON) a caller may hand in to be tested: a flag's
 * evaluation context, a policy assembly's context and variables. Attributes rules test are
 * ids, plans, countries and the like; 16 KiB is far beyond them and keeps the worst rule set
 * (50 rules of 2,000 characters of `contains` tests) over it to milliseconds.
 */
export const MAX_FACTS_BYTES = 16 * 1024;

/**
 * Why `facts` may not be tested, or undefined when it may: its JSON is larger than
 * `maxBytes`. Measured as UTF-8 JSON, what the client sent, so the message names a size the
 * client can check.
 */
export function factsTooLarge(facts: unknown, maxBytes = MAX_FACTS_BYTES): string | undefined {
  const bytes = Buffer.byteLength(JSON.stringify(facts) ?? '', 'utf8');
  return bytes > maxBytes
    ? `is ${bytes} bytes as JSON, more than the limit of ${maxBytes} bytes that conditions test`
    : undefined;
}

/**
 * Lower-cases each distinct string once, however many tests read it. Share one across every
 * condition evaluated over the same facts (a flag's rules, all flags of a request, a run's
 * attachments): `contains` over a large value then costs one pass to normalise, not one per test.
 */
export type Normaliser = (text: string) => string;

/** A fresh `Normaliser`; it remembers what it lower-cased for as long as it is kept. */
export function createNormaliser(): Normaliser {
  const lowered = new Map<string, string>();
  return (text) => {
    let lower = lowered.get(text);
    if (lower === undefined) {
      lower = text.toLowerCase();
      lowered.set(text, lower);
    }
    return lower;
  };
}
const MAX_DEPTH = 32;
const MAX_LIST = 100;

type Token =
  | { kind: 'word'; text: string; at: number }
  | { kind: 'string'; value: string; at: number }
  | { kind: 'number'; value: number; at: number }
  | { kind: 'symbol'; text: string; at: number }
  | { kind: 'end'; at: number };

const SYMBOLS = ['==', '!=', '<=', '>=', '<', '>', '(', ')', '[', ']', ','];

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i] as string;
    if (/\s/.test(c)) {
      i += 1;
      continue;
    }
    const symbol = SYMBOLS.find((s) => source.startsWith(s, i));
    if (symbol) {
      tokens.push({ kind: 'symbol', text: symbol, at: i });
      i += symbol.length;
      continue;
    }
    if (c === '"') {
      let value = '';
      let j = i + 1;
      for (;;) {
        if (j >= source.length) throw new ConditionError('unterminated string', i);
        const d = source[j] as string;
        if (d === '"') break;
        if (d === '\\') {
          const escaped = source[j + 1];
          if (escaped !== '"' && escaped !== '\\')
            throw new ConditionError('only \\" and \\\\ can be escaped', j);
          value += escaped;
          j += 2;
          continue;
        }
        value += d;
        j += 1;
      }
      tokens.push({ kind: 'string', value, at: i });
      i = j + 1;
      continue;
    }
    const number = /^-?\d+(?:\.\d+)?/.exec(source.slice(i, i + 40));
    if (number) {
      tokens.push({ kind: 'number', value: Number(number[0]), at: i });
      i += number[0].length;
      continue;
    }
    const word = /^[A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*/.exec(source.slice(i, i + 300));
    if (word) {
      tokens.push({ kind: 'word', text: word[0], at: i });
      i += word[0].length;
      continue;
    }
    throw new ConditionError(`unexpected character ${JSON.stringify(c)}`, i);
  }
  tokens.push({ kind: 'end', at: source.length });
  return tokens;
}

const OPS = new Set<string>(['==', '!=', '<', '<=', '>', '>=', 'contains', 'in', 'startswith', 'endswith']);
const KEYWORDS = new Set(['and', 'or', 'not', 'true', 'false', 'null', 'exists', ...OPS]);

/** Parses a condition; throws `ConditionError` naming where it went wrong. */
export function parseCondition(source: string): Condition {
  if (source.length > MAX_CONDITION_LENGTH) {
    throw new ConditionError(`is longer than ${MAX_CONDITION_LENGTH} characters`, MAX_CONDITION_LENGTH);
  }
  const tokens = tokenize(source);
  let at = 0;
  const peek = () => tokens[at] as Token;
  const next = () => tokens[at++] as Token;
  const isWord = (token: Token, text: string) => token.kind === 'word' && token.text === text;
  const isSymbol = (token: Token, text: string) => token.kind === 'symbol' && token.text === text;
  const expect = (text: string) => {
    const token = next();
    if (!isSymbol(token, text)) throw new ConditionError(`expected ${text}`, token.at);
  };

  function literal(): Literal {
    const token = next();
    if (token.kind === 'string' || token.kind === 'number') return token.value;
    if (isWord(token, 'true')) return true;
    if (isWord(token, 'false')) return false;
    if (isWord(token, 'null')) return null;
    throw new ConditionError('expected a value (a "string", a number, true, false or null)', token.at);
  }

  function value(): Value {
    if (!isSymbol(peek(), '[')) return literal();
    next();
    const items: Literal[] = [literal()];
    while (isSymbol(peek(), ',')) {
      next();
      if (items.length >= MAX_LIST)
        throw new ConditionError(`a list holds at most ${MAX_LIST} values`, peek().at);
      items.push(literal());
    }
    expect(']');
    return items;
  }

  function unary(depth: number): Condition {
    if (depth > MAX_DEPTH) throw new ConditionError(`nests deeper than ${MAX_DEPTH}`, peek().at);
    const token = next();
    if (isWord(token, 'not')) return { type: 'not', of: unary(depth + 1) };
    if (isSymbol(token, '(')) {
      const inner = or(depth + 1);
      expect(')');
      return inner;
    }
    if (isWord(token, 'true')) return { type: 'const', value: true };
    if (isWord(token, 'false')) return { type: 'const', value: false };
    if (token.kind !== 'word' || KEYWORDS.has(token.text)) {
      throw new ConditionError('expected a path (such as goal or context.environment)', token.at);
    }
    const path = token.text.split('.');
    const opToken = next();
    if (isWord(opToken, 'exists')) return { type: 'exists', path };
    const op = opToken.kind === 'word' || opToken.kind === 'symbol' ? opToken.text : '';
    if (!OPS.has(op)) {
      throw new ConditionError(
        'expected an operator (==, !=, <, <=, >, >=, contains, in, startswith, endswith, exists)',
        opToken.at,
      );
    }
    const operand = value();
    if (op === 'in' && !Array.isArray(operand)) throw new ConditionError('in needs a list: [..]', opToken.at);
    return { type: 'test', path, op: op as Op, value: operand };
  }

  function and(depth: number): Condition {
    const of = [unary(depth)];
    while (isWord(peek(), 'and')) {
      next();
      of.push(unary(depth));
    }
    return of.length === 1 ? (of[0] as Condition) : { type: 'and', of };
  }

  function or(depth: number): Condition {
    const of = [and(depth)];
    while (isWord(peek(), 'or')) {
      next();
      of.push(and(depth));
    }
    return of.length === 1 ? (of[0] as Condition) : { type: 'or', of };
  }

  const condition = or(0);
  const rest = peek();
  if (rest.kind !== 'end') throw new ConditionError('unexpected text after the condition', rest.at);
  return condition;
}

function read(facts: unknown, path: readonly string[]): unknown {
  let value: unknown = facts;
  for (const name of path) {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
    if (!Object.hasOwn(value, name)) return undefined;
    value = (value as Record<string, unknown>)[name];
  }
  return value;
}

function test(actual: unknown, op: Op, expected: Value, lower: Normaliser): boolean {
  if (actual === undefined) return false;
  switch (op) {
    case '==':
      return actual === expected;
    case '!=':
      return actual !== expected;
    case '<':
    case '<=':
    case '>':
    case '>=': {
      const comparable =
        (typeof actual === 'number' && typeof expected === 'number') ||
        (typeof actual === 'string' && typeof expected === 'string');
      if (!comparable) return false;
      const a = actual as number | string;
      const b = expected as number | string;
      return op === '<' ? a < b : op === '<=' ? a <= b : op === '>' ? a > b : a >= b;
    }
    case 'contains':
      if (typeof actual === 'string' && typeof expected === 'string') {
        return lower(actual).includes(lower(expected));
      }
      if (!Array.isArray(actual)) return false;
      if (typeof expected !== 'string') return actual.some((item) => item === expected);
      return actual.some((item) => typeof item === 'string' && lower(item) === lower(expected));
    case 'in':
      return Array.isArray(expected) && expected.some((item) => item === actual);
    case 'startswith':
      return (
        typeof actual === 'string' &&
        typeof expected === 'string' &&
        lower(actual).startsWith(lower(expected))
      );
    case 'endswith':
      return (
        typeof actual === 'string' && typeof expected === 'string' && lower(actual).endsWith(lower(expected))
      );
  }
}

/**
 * Whether `condition` holds for `facts`. Pass the same `lower` to every evaluation over the
 * same facts, so that each string is lower-cased once (see `Normaliser`).
 */
export function evaluateCondition(
  condition: Condition,
  facts: Record<string, unknown>,
  lower: Normaliser = createNormaliser(),
): boolean {
  switch (condition.type) {
    case 'const':
      return condition.value;
    case 'not':
      return !evaluateCondition(condition.of, facts, lower);
    case 'and':
      return condition.of.every((part) => evaluateCondition(part, facts, lower));
    case 'or':
      return condition.of.some((part) => evaluateCondition(part, facts, lower));
    case 'exists':
      return read(facts, condition.path) !== undefined;
    case 'test':
      return test(read(facts, condition.path), condition.op, condition.value, lower);
  }
}
