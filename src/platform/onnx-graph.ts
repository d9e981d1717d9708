/**
 * ONNX graphs written in code and run on ONNX Runtime's native CPU kernels (`onnxruntime-node`):
 * the offline sentence encoder's model and the exact vector search are both such graphs. A graph
 * is built once, serialised with `onnx-proto`, and opened as a session on one thread (the callers
 * already spread their work over worker threads or keep it short).
 */
import onnxProto from 'onnx-proto';
import * as ort from 'onnxruntime-node';

const { onnx } = onnxProto;

type Attributes = Record<string, number | number[]>;
/** A graph input's or output's element type and dimensions (a name for a dimension that varies). */
export interface Port {
  name: string;
  type: 'float' | 'int64';
  dims: (string | number)[];
}

export interface GraphBuilder {
  /** A constant tensor of the graph (a weight); its name. */
  tensor(dims: number[], values: Float32Array | BigInt64Array | Int8Array): string;
  scalar(value: number): string;
  ints(...values: number[]): string;
  /** A node with `outputs` outputs; their names. */
  node(opType: string, inputs: string[], attributes?: Attributes, outputs?: number): string[];
  /** A node with one output; its name. */
  op(opType: string, inputs: string[], attributes?: Attributes): string;
  /** A node of ONNX Runtime's own operators (domain com.microsoft) with one output; its name. */
  contrib(opType: string, inputs: string[]): string;
  /** The model (opset 17), serialised; `outputs` name nodes' outputs. */
  model(name: string, inputs: Port[], outputs: Port[]): Uint8Array;
}

export function graphBuilder(): GraphBuilder {
  const initializers: InstanceType<typeof onnx.TensorProto>[] = [];
  const nodes: InstanceType<typeof onnx.NodeProto>[] = [];
  let next = 0;
  let usesContrib = false;
  const elemType = (type: Port['type'] | 'int8') =>
    type === 'float' ? onnx.TensorProto.DataType.FLOAT : type === 'int8' ? onnx.TensorProto.DataType.INT8 : onnx.TensorProto.DataType.INT64;
  const valueInfo = ({ name, type, dims }: Port) =>
    onnx.ValueInfoProto.create({
      name,
      type: {
        tensorType: {
          elemType: elemType(type),
          shape: { dim: dims.map((dim) => (typeof dim === 'string' ? { dimParam: dim } : { dimValue: dim })) },
        },
      },
    });
  const attribute = (name: string, value: number | number[]) =>
    Array.isArray(value)
      ? onnx.AttributeProto.create({ name, type: onnx.AttributeProto.AttributeType.INTS, ints: value })
      : Number.isInteger(value)
        ? onnx.AttributeProto.create({ name, type: onnx.AttributeProto.AttributeType.INT, i: value })
        : onnx.AttributeProto.create({ name, type: onnx.AttributeProto.AttributeType.FLOAT, f: value });

  const addNode = (domain: string, opType: string, input: string[], attributes: Attributes, outputs: number) => {
    const output = Array.from({ length: outputs }, () => `t${next++}`);
    nodes.push(
      onnx.NodeProto.create({
        domain,
        opType,
        input,
        output,
        attribute: Object.entries(attributes).map(([name, value]) => attribute(name, value)),
      }),
    );
    return output;
  };

  const builder: GraphBuilder = {
    tensor(dims, values) {
      const name = `w${next++}`;
      initializers.push(
        onnx.TensorProto.create({
          name,
          dims,
          dataType: elemType(values instanceof Float32Array ? 'float' : values instanceof Int8Array ? 'int8' : 'int64'),
          rawData: new Uint8Array(values.buffer, values.byteOffset, values.byteLength),
        }),
      );
      return name;
    },
    scalar: (value) => builder.tensor([], Float32Array.of(value)),
    ints: (...values) =>
      builder.tensor(
        [values.length],
        BigInt64Array.from(values, (value) => BigInt(value)),
      ),
    node: (opType, input, attributes = {}, outputs = 1) => addNode('', opType, input, attributes, outputs),
    op: (opType, input, attributes) => builder.node(opType, input, attributes)[0]!,
    contrib(opType, input) {
      usesContrib = true;
      return addNode('com.microsoft', opType, input, {}, 1)[0]!;
    },
    model(name, inputs, outputs) {
      const graph = onnx.GraphProto.create({
        name,
        node: nodes,
        initializer: initializers,
        input: inputs.map(valueInfo),
        output: outputs.map(valueInfo),
      });
      return onnx.ModelProto.encode(
        onnx.ModelProto.create({
          irVersion: 8,
          opsetImport: [{ domain: '', version: 17 }, ...(usesContrib ? [{ domain: 'com.microsoft', version: 1 }] : [])],
          producerName: 'callforge',
          graph,
        }),
      ).finish();
    },
  };
  return builder;
}

/** A session on one thread of ONNX Runtime's CPU kernels. */
export function openSession(model: Uint8Array): Promise<ort.InferenceSession> {
  return ort.InferenceSession.create(model, {
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
}

export { ort };
