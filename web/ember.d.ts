// Types of web/ember.js: ember's WebAssembly build through its C ABI (docs/web.md).

export type DType =
  | "bool" | "uint8" | "int8" | "int16" | "int32" | "int64"
  | "float16" | "bfloat16" | "float32" | "float64";
export type TypedArray =
  | Float32Array | Float64Array | Int32Array | Int16Array | Int8Array | Uint8Array
  | BigInt64Array;

/** A failed call: `message` is ember's ("ember_matmul: [matmul] shapes ..."). */
export class EmberError extends Error {
  readonly status: number;
  /** The C ABI's status name, e.g. "EMBER_ERR_SHAPE". */
  readonly statusName: string;
}

interface Disposable {
  /** Frees the native object now; using it afterwards throws. Idempotent. */
  dispose(): void;
  readonly disposed: boolean;
}

export class Tensor implements Disposable {
  dispose(): void;
  readonly disposed: boolean;
  readonly shape: number[];
  readonly dtype: DType;
  readonly numel: number;
  /** A copy of the elements in the tensor's own dtype (float16/bfloat16: as float32). */
  data(): TypedArray;
  toFloat32Array(): Float32Array;
  add(other: Tensor): Tensor;
  sub(other: Tensor): Tensor;
  mul(other: Tensor): Tensor;
  div(other: Tensor): Tensor;
  matmul(other: Tensor): Tensor;
  relu(): Tensor;
  softmax(dim?: number): Tensor;
  logSoftmax(dim?: number): Tensor;
  argmax(dim?: number, keepdim?: boolean): Tensor;
  reshape(shape: number[]): Tensor;
  to(dtype: DType): Tensor;
  toString(): string;
}

export class StateDict implements Disposable {
  dispose(): void;
  readonly disposed: boolean;
  keys(): string[];
  /** A new handle to the tensor under `key` (throws EMBER_ERR_KEY when absent). */
  get(key: string): Tensor;
}

export class Module implements Disposable {
  dispose(): void;
  readonly disposed: boolean;
  /** Copies the tensors into the module (strict: missing/unexpected keys throw). */
  load(stateDict: StateDict, strict?: boolean): this;
  stateDict(): StateDict;
  train(on?: boolean): this;
  eval(): this;
  readonly numParameters: number;
  /** forward(x) without gradients. */
  forward(x: Tensor): Tensor;
  /** forward on a Float32Array of `shape`; the output (softmax'd when asked) as floats. */
  predict(input: Float32Array, shape: number[], options?: { softmax?: boolean }): Float32Array;
  /** One SGD step (momentum 0.9) on cross_entropy(forward(x), labels); returns the loss. */
  trainStepSgd(x: Tensor, labels: Tensor, lr: number): number;
  toString(): string;
}

export class Ember {
  /** True for the pthreads build (SharedArrayBuffer). */
  readonly threaded: boolean;
  /** False for ember-infer, the inference-only module: Module.trainStepSgd and saving throw
   *  EmberError EMBER_ERR_NOT_IMPLEMENTED there. */
  readonly training: boolean;
  readonly version: string;
  numThreads: number;
  tensor(data: TypedArray, shape?: number[], dtype?: DType): Tensor;
  zeros(shape: number[], dtype?: DType): Tensor;
  stateDictFromBytes(bytes: ArrayBuffer | Uint8Array): StateDict;
  loadSafetensors(source: ArrayBuffer | Uint8Array | Response | Promise<Response>):
      Promise<StateDict>;
  /** The Fashion-MNIST CNN of examples/fashion_mnist: [N,1,28,28] -> [N,10] logits. */
  fashionCnn(): Module;
  /** Linear/ReLU/.../Linear with torch.nn.Sequential's keys ("0.weight", "2.weight", ...). */
  mlp(sizes: number[]): Module;
}

export interface LoadOptions {
  /** "auto" (default): the pthreads build when the page is cross-origin isolated. */
  threads?: "auto" | boolean;
  /** Where ember-st.js / ember-mt.js / ember-infer.js and their .wasm files are (default "./"). */
  baseUrl?: string;
  /** false: the smallest module that runs models (single-threaded: ember-infer, without
   *  gradients, optimizers or writer; the pthreads build keeps them). Default true. */
  training?: boolean;
}
export function loadEmber(options?: LoadOptions): Promise<Ember>;
