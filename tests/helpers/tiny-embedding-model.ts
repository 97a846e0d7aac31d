import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Writes a tiny sentence-embedding model folder in the transformers.js layout (`config.json`,
 * `tokenizer.json`, `tokenizer_config.json`, `onnx/model.onnx`), so tests run the real local
 * model path (transformers.js tokenizer, onnxruntime-node session, mean pooling, normalising)
 * with no download: no npm package ships such a model (docs/retrieval.md, "Embeddings").
 *
 * The "model" is a BERT-shaped ONNX graph of one `Gather`: each token's row of an embedding
 * table is its hidden state. Its meaning is written by hand: the words of each topic below
 * share one axis, so a query and a document that have no word in common still meet when their
 * words are of one topic (a paraphrase), which is what a sentence-embedding model provides.
 * Words outside the vocabulary become `[UNK]`, a small vector on an axis of its own.
 */
export const TINY_MODEL_TOPICS: Readonly<Record<string, readonly string[]>> = {
  vehicles: [
    'car',
    'automobile',
    'vehicle',
    'engine',
    'tyres',
    'mechanic',
    'repair',
    'garage',
    'brakes',
    'fixing',
  ],
  baking: ['bread', 'bake', 'baking', 'dough', 'oven', 'flour', 'loaf', 'yeast', 'kitchen', 'recipe'],
  weather: ['rain', 'storm', 'forecast', 'weather', 'umbrella', 'thunder', 'wind', 'cloudy'],
  money: ['bank', 'loan', 'interest', 'mortgage', 'savings', 'money', 'credit', 'budget'],
};

const SPECIAL = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'] as const;
/** Hidden size: one axis per topic, one for `[UNK]`, and spare axes. */
const HIDDEN = 8;
const UNK_AXIS = HIDDEN - 1;

/** Writes the model folder `dir` (created if missing) and returns its vocabulary size. */
export async function writeTinyEmbeddingModel(dir: string): Promise<number> {
  const vocab: string[] = [...SPECIAL];
  const table: number[][] = SPECIAL.map((token) => axis(token === '[UNK]' ? UNK_AXIS : -1, 0.2));
  Object.values(TINY_MODEL_TOPICS).forEach((words, topic) => {
    for (const word of words) {
      vocab.push(word);
      table.push(axis(topic, 1));
    }
  });
  await mkdir(join(dir, 'onnx'), { recursive: true });
  await writeFile(
    join(dir, 'config.json'),
    JSON.stringify({
      model_type: 'bert',
      architectures: ['BertModel'],
      hidden_size: HIDDEN,
      vocab_size: vocab.length,
      max_position_embeddings: 512,
    }),
  );
  await writeFile(join(dir, 'tokenizer.json'), JSON.stringify(tokenizerJson(vocab)));
  await writeFile(
    join(dir, 'tokenizer_config.json'),
    JSON.stringify({
      tokenizer_class: 'BertTokenizer',
      do_lower_case: true,
      model_max_length: 512,
      cls_token: '[CLS]',
      sep_token: '[SEP]',
      pad_token: '[PAD]',
      unk_token: '[UNK]',
      mask_token: '[MASK]',
    }),
  );
  await writeFile(join(dir, 'onnx', 'model.onnx'), onnxModel(table));
  return vocab.length;
}

function axis(index: number, value: number): number[] {
  return Array.from({ length: HIDDEN }, (_, i) => (i === index ? value : 0));
}

function tokenizerJson(vocab: string[]) {
  const special = (token: string) => ({ id: token, type_id: 0 });
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: SPECIAL.map((content, id) => ({
      id,
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    })),
    normalizer: {
      type: 'BertNormalizer',
      clean_text: true,
      handle_chinese_chars: true,
      strip_accents: null,
      lowercase: true,
    },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: {
      type: 'TemplateProcessing',
      single: [
        { SpecialToken: special('[CLS]') },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: special('[SEP]') },
      ],
      pair: [
        { SpecialToken: special('[CLS]') },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: special('[SEP]') },
        { Sequence: { id: 'B', type_id: 1 } },
        { SpecialToken: { id: '[SEP]', type_id: 1 } },
      ],
      special_tokens: {
        '[CLS]': { id: '[CLS]', ids: [vocab.indexOf('[CLS]')], tokens: ['[CLS]'] },
        '[SEP]': { id: '[SEP]', ids: [vocab.indexOf('[SEP]')], tokens: ['[SEP]'] },
      },
    },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: {
      type: 'WordPiece',
      unk_token: '[UNK]',
      continuing_subword_prefix: '##',
      max_input_chars_per_word: 100,
      vocab: Object.fromEntries(vocab.map((token, id) => [token, id])),
    },
  };
}

// --- A minimal protobuf writer for the few ONNX messages the graph needs. ---

const TENSOR_FLOAT = 1;
const TENSOR_INT64 = 7;

function varint(value: number | bigint): number[] {
  let rest = BigInt(value);
  const bytes: number[] = [];
  do {
    let byte = Number(rest & 0x7fn);
    rest >>= 7n;
    if (rest > 0n) byte |= 0x80;
    bytes.push(byte);
  } while (rest > 0n);
  return bytes;
}

/** A varint field. */
const num = (field: number, value: number | bigint) => Buffer.from([...varint(field << 3), ...varint(value)]);
/** A length-delimited field: bytes, a string or an embedded message. */
function bytes(field: number, value: Buffer | string | Buffer[]): Buffer {
  const body = Array.isArray(value) ? Buffer.concat(value) : Buffer.from(value);
  return Buffer.concat([Buffer.from([...varint((field << 3) | 2), ...varint(body.length)]), body]);
}

/** A graph input (field 11) or output (12): a tensor whose dimensions are names (dynamic) or sizes. */
function valueInfo(field: 11 | 12, name: string, elemType: number, dims: (string | number)[]): Buffer {
  const shape = dims.map((dim) => bytes(1, [typeof dim === 'string' ? bytes(2, dim) : num(1, dim)]));
  const tensorType = bytes(1, [num(1, elemType), bytes(2, shape)]);
  return bytes(field, [bytes(1, name), bytes(2, [tensorType])]);
}

function onnxModel(table: number[][]): Buffer {
  const weights = Buffer.alloc(table.length * HIDDEN * 4);
  for (const [index, value] of table.flat().entries()) weights.writeFloatLE(value, index * 4);
  const initializer = bytes(5, [
    num(1, table.length),
    num(1, HIDDEN),
    num(2, TENSOR_FLOAT),
    bytes(8, 'embeddings.word_embeddings.weight'),
    bytes(9, weights),
  ]);
  const gather = bytes(1, [
    bytes(1, 'embeddings.word_embeddings.weight'),
    bytes(1, 'input_ids'),
    bytes(2, 'last_hidden_state'),
    bytes(3, 'gather'),
    bytes(4, 'Gather'),
    // AttributeProto { name: axis, i: 0, type: INT (2) }
    bytes(5, [bytes(1, 'axis'), num(3, 0), num(20, 2)]),
  ]);
  const graph = Buffer.concat([
    gather,
    bytes(2, 'tiny-embedding'),
    initializer,
    valueInfo(11, 'input_ids', TENSOR_INT64, ['batch_size', 'sequence_length']),
    valueInfo(11, 'attention_mask', TENSOR_INT64, ['batch_size', 'sequence_length']),
    valueInfo(12, 'last_hidden_state', TENSOR_FLOAT, ['batch_size', 'sequence_length', HIDDEN]),
  ]);
  return Buffer.concat([
    num(1, 8), // ir_version
    bytes(2, 'agent-platform tests'),
    bytes(7, graph),
    bytes(8, [bytes(1, ''), num(2, 13)]), // opset_import: the default domain, opset 13
  ]);
}
