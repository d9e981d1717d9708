/**
 * For tests: a model of Smart Turn v3's inputs and outputs (`input_features`, float32
 * 1 × 80 × 800, in; one probability, 1 × 1, out), written as an ONNX graph. Its answer is the
 * sigmoid of how loud the last half second of the features is against `threshold`, so a test knows
 * what it must say: above, the turn is complete.
 */
import { graphBuilder } from '../../../../platform/onnx-graph.ts';
import { FRAMES, MEL_BANDS } from './features.ts';

export function fakeSmartTurnModel(threshold: number): Uint8Array {
  const g = graphBuilder();
  const last = g.op('Slice', ['input_features', g.ints(FRAMES - 50), g.ints(FRAMES), g.ints(2)]);
  const loudness = g.op('ReduceMean', [last], { keepdims: 0, axes: [1, 2] });
  const probability = g.op('Sigmoid', [g.op('Mul', [g.op('Sub', [loudness, g.scalar(threshold)]), g.scalar(50)])]);
  const output = g.op('Reshape', [probability, g.ints(1, 1)]);
  return g.model(
    'smart-turn-like',
    [{ name: 'input_features', type: 'float', dims: [1, MEL_BANDS, FRAMES] }],
    [{ name: output, type: 'float', dims: [1, 1] }],
  );
}
