// ember in JavaScript: a typed wrapper (ember.d.ts) over the C ABI (ember/c/ember.h) of the
// WebAssembly build (cmake/wasm.cmake, docs/web.md). Every handle is a JS object with dispose();
// memory is freed when dispose() is called, never by the garbage collector. A failed call throws
// an EmberError carrying ember's message ("ember_matmul: [matmul] shapes ...") and status.
//
//   import { loadEmber } from "./ember.js";
//   const em = await loadEmber({ baseUrl: "./build/" });       // ember-mt when isolated, else st
//   const weights = await em.loadSafetensors(fetch("fashion_mnist.safetensors"));
//   const net = em.fashionCnn(); net.load(weights); weights.dispose();
//   const probs = net.predict(pixels, [1, 1, 28, 28]);          // Float32Array of softmax
//   net.dispose();

const DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
                "float32", "float64"];
const STATUS = ["EMBER_OK", "EMBER_ERR_NULL", "EMBER_ERR_SHAPE", "EMBER_ERR_DTYPE",
                "EMBER_ERR_DEVICE", "EMBER_ERR_INDEX", "EMBER_ERR_VALUE",
                "EMBER_ERR_NOT_IMPLEMENTED", "EMBER_ERR_OUT_OF_MEMORY", "EMBER_ERR_IO",
                "EMBER_ERR_FORMAT", "EMBER_ERR_KEY", "EMBER_ERR_BUFFER", "EMBER_ERR_INTERNAL"];
const TYPED = { float32: Float32Array, float64: Float64Array, int32: Int32Array,
                int16: Int16Array, int8: Int8Array, uint8: Uint8Array, bool: Uint8Array,
                int64: BigInt64Array };

/** An error from ember: `message` is ember's, `status` the C ABI's code. */
export class EmberError extends Error {
  constructor(message, status) {
    super(message);
    this.name = "EmberError";
    this.status = status;
    this.statusName = STATUS[status] ?? "EMBER_ERR_UNKNOWN";
  }
}

function dtypeOf(data) {
  if (data instanceof Float32Array) return "float32";
  if (data instanceof Float64Array) return "float64";
  if (data instanceof Int32Array) return "int32";
  if (data instanceof BigInt64Array) return "int64";
  if (data instanceof Uint8Array) return "uint8";
  if (data instanceof Int8Array) return "int8";
  if (data instanceof Int16Array) return "int16";
  throw new TypeError("ember: unsupported typed array " + data?.constructor?.name);
}

class Handle {
  constructor(em, ptr, free) {
    this._em = em;
    this._ptr = ptr;
    this._free = free;
  }
  get ptr() {
    if (!this._ptr) throw new EmberError(`${this.constructor.name} used after dispose()`, 1);
    return this._ptr;
  }
  get disposed() { return this._ptr === 0; }
  /** Frees the native object now (idempotent). */
  dispose() {
    if (this._ptr) this._em._m[this._free](this._ptr);
    this._ptr = 0;
  }
}

/** A tensor in WebAssembly memory. */
export class Tensor extends Handle {
  constructor(em, ptr) { super(em, ptr, "_ember_tensor_free"); }
  get shape() {
    const em = this._em;
    const nd = em._call("ember_tensor_ndim", (p) => em._m._ember_tensor_ndim(this.ptr, p), 4,
                        "i32");
    if (nd === 0) return [];
    return em._withScratch(8 * nd, (p) => {
      em._check(em._m._ember_tensor_shape(this.ptr, p, nd));
      return Array.from(em._heap(BigInt64Array, p, nd), Number);
    });
  }
  get dtype() {
    const em = this._em;
    return DTYPES[em._call("ember_tensor_dtype", (p) => em._m._ember_tensor_dtype(this.ptr, p), 4,
                           "i32")];
  }
  get numel() { return this.shape.reduce((a, b) => a * b, 1); }
  /** The elements as a typed array of the tensor's dtype (a copy). */
  data() {
    const em = this._em, dtype = this.dtype, T = TYPED[dtype];
    if (!T) return this.toFloat32Array();
    const n = this.numel;
    return em._withScratch(n * T.BYTES_PER_ELEMENT, (p) => {
      em._check(em._m._ember_tensor_read(this.ptr, p, n * T.BYTES_PER_ELEMENT));
      return em._heap(T, p, n).slice();
    });
  }
  /** The elements converted to float32 (a copy). */
  toFloat32Array() {
    const em = this._em, n = this.numel;
    return em._withScratch(4 * n, (p) => {
      em._check(em._m._ember_tensor_read_f32(this.ptr, p, BigInt(n)));
      return em._heap(Float32Array, p, n).slice();
    });
  }
  add(o) { return this._em._op2("ember_add", this, o); }
  sub(o) { return this._em._op2("ember_sub", this, o); }
  mul(o) { return this._em._op2("ember_mul", this, o); }
  div(o) { return this._em._op2("ember_div", this, o); }
  matmul(o) { return this._em._op2("ember_matmul", this, o); }
  relu() { return this._em._out((p) => this._em._m._ember_relu(this.ptr, p), Tensor); }
  softmax(dim = -1) {
    return this._em._out((p) => this._em._m._ember_softmax(this.ptr, BigInt(dim), p), Tensor);
  }
  logSoftmax(dim = -1) {
    return this._em._out((p) => this._em._m._ember_log_softmax(this.ptr, BigInt(dim), p), Tensor);
  }
  argmax(dim = -1, keepdim = false) {
    return this._em._out(
        (p) => this._em._m._ember_argmax(this.ptr, BigInt(dim), keepdim ? 1 : 0, p), Tensor);
  }
  reshape(shape) {
    const em = this._em;
    return em._withShape(shape, (sp) =>
        em._out((p) => em._m._ember_tensor_reshape(this.ptr, sp, shape.length, p), Tensor));
  }
  to(dtype) {
    const d = DTYPES.indexOf(dtype);
    if (d < 0) throw new EmberError(`ember: unknown dtype '${dtype}'`, 6);
    return this._em._out((p) => this._em._m._ember_tensor_to_dtype(this.ptr, d, p), Tensor);
  }
  toString() {
    const em = this._em;
    const s = em._call("ember_tensor_str", (p) => em._m._ember_tensor_str(this.ptr, p), 4, "i32");
    const text = em._m.UTF8ToString(s);
    em._m._ember_string_free(s);
    return text;
  }
}

/** Named tensors, in file order (a safetensors file's contents). */
export class StateDict extends Handle {
  constructor(em, ptr) { super(em, ptr, "_ember_state_dict_free"); }
  keys() {
    const em = this._em;
    const n = em._call("ember_state_dict_size", (p) => em._m._ember_state_dict_size(this.ptr, p),
                       4, "i32");
    const keys = [];
    for (let i = 0; i < n; ++i) {
      const s = em._call("ember_state_dict_key",
                         (p) => em._m._ember_state_dict_key(this.ptr, i, p), 4, "i32");
      keys.push(em._m.UTF8ToString(s));
    }
    return keys;
  }
  /** The tensor under `key` (a new handle: dispose it). */
  get(key) {
    const em = this._em;
    return em._withString(key, (k) =>
        em._out((p) => em._m._ember_state_dict_get(this.ptr, k, p), Tensor));
  }
}

/** An nn::Module: the Fashion-MNIST CNN, an MLP. */
export class Module extends Handle {
  constructor(em, ptr) { super(em, ptr, "_ember_module_free"); }
  /** Copies the state dict's tensors into the parameters (strict: keys must match). */
  load(stateDict, strict = true) {
    this._em._check(this._em._m._ember_module_load_state_dict(this.ptr, stateDict.ptr,
                                                              strict ? 1 : 0));
    return this;
  }
  stateDict() {
    return this._em._out((p) => this._em._m._ember_module_state_dict(this.ptr, p), StateDict);
  }
  train(on = true) {
    this._em._check(this._em._m._ember_module_train(this.ptr, on ? 1 : 0));
    return this;
  }
  eval() { return this.train(false); }
  get numParameters() {
    const em = this._em;
    return Number(em._call("ember_module_num_parameters",
                           (p) => em._m._ember_module_num_parameters(this.ptr, p), 8, "i64"));
  }
  /** forward(x) without gradients: a new Tensor. */
  forward(x) {
    return this._em._out((p) => this._em._m._ember_module_forward(this.ptr, x.ptr, p), Tensor);
  }
  /** Runs the module on a Float32Array of `shape` and returns the output as a Float32Array
   *  (softmax over the last dim when `softmax` is true); every temporary is freed. */
  predict(input, shape, { softmax = false } = {}) {
    const x = this._em.tensor(input, shape);
    let y = null, s = null;
    try {
      y = this.forward(x);
      if (softmax) s = y.softmax(-1);
      return (s ?? y).toFloat32Array();
    } finally {
      x.dispose();
      y?.dispose();
      s?.dispose();
    }
  }
  /** One SGD step (momentum 0.9) on cross_entropy(forward(x), labels): returns the loss. */
  trainStepSgd(x, labels, lr) {
    const em = this._em;
    return em._call("ember_module_train_step_sgd",
                    (p) => em._m._ember_module_train_step_sgd(this.ptr, x.ptr, labels.ptr, lr, p),
                    4, "float");
  }
  toString() {
    const em = this._em;
    const s = em._call("ember_module_repr", (p) => em._m._ember_module_repr(this.ptr, p), 4, "i32");
    const text = em._m.UTF8ToString(s);
    em._m._ember_string_free(s);
    return text;
  }
}

/** One loaded WebAssembly instance of ember. */
export class Ember {
  constructor(module, threaded, training = true) {
    this._m = module;
    this.threaded = threaded;
    this.training = training;
  }
  get version() { return this._m.UTF8ToString(this._m._ember_version()); }
  get numThreads() { return this._m._ember_num_threads(); }
  set numThreads(n) { this._check(this._m._ember_set_num_threads(n)); }

  /** A tensor holding a copy of `data` (a typed array) with `shape` (default: 1-D). */
  tensor(data, shape = [data.length], dtype = dtypeOf(data)) {
    const d = DTYPES.indexOf(dtype);
    if (d < 0) throw new EmberError(`ember: unknown dtype '${dtype}'`, 6);
    const bytes = data.byteLength;
    return this._withScratch(bytes, (buf) => {
      this._heap(Uint8Array, buf, bytes).set(new Uint8Array(data.buffer, data.byteOffset, bytes));
      return this._withShape(shape, (sp) => this._out(
          (p) => this._m._ember_tensor_from_data(buf, d, sp, shape.length, 0, p), Tensor));
    });
  }
  zeros(shape, dtype = "float32") {
    const d = DTYPES.indexOf(dtype);
    return this._withShape(shape, (sp) =>
        this._out((p) => this._m._ember_tensor_zeros(d, sp, shape.length, 0, p), Tensor));
  }
  /** A state dict from a safetensors file's bytes (ArrayBuffer, typed array), synchronously. */
  stateDictFromBytes(bytes) {
    const u8 = bytes instanceof ArrayBuffer ? new Uint8Array(bytes)
                                            : new Uint8Array(bytes.buffer, bytes.byteOffset,
                                                             bytes.byteLength);
    return this._withScratch(u8.length, (buf) => {
      this._heap(Uint8Array, buf, u8.length).set(u8);
      return this._out((p) => this._m._ember_state_dict_load_bytes(buf, u8.length, p), StateDict);
    });
  }
  /** A state dict from an ArrayBuffer, a typed array, a fetch Response or a promise of one. */
  async loadSafetensors(source) {
    source = await source;
    if (typeof Response !== "undefined" && source instanceof Response) {
      if (!source.ok)
        throw new EmberError(`ember: fetching ${source.url} failed: HTTP ${source.status}`, 9);
      source = await source.arrayBuffer();
    }
    return this.stateDictFromBytes(source);
  }
  /** The Fashion-MNIST CNN of examples/fashion_mnist (input [N,1,28,28], output [N,10]). */
  fashionCnn() { return this._out((p) => this._m._ember_model_fashion_cnn(p), Module); }
  /** Linear/ReLU layers: mlp([784, 128, 10]). */
  mlp(sizes) {
    return this._withScratch(8 * sizes.length, (sp) => {
      this._heap(BigInt64Array, sp, sizes.length).set(sizes.map(BigInt));
      return this._out((p) => this._m._ember_model_mlp(sp, sizes.length, p), Module);
    });
  }

  // --- plumbing ---
  _heap(T, ptr, n) { return new T(this._m.HEAPU8.buffer, ptr, n); }
  _check(status) {
    if (status !== 0)
      throw new EmberError(this._m.UTF8ToString(this._m._ember_last_error()), status);
  }
  _withScratch(bytes, fn) {
    const p = this._m._malloc(Math.max(8, bytes));
    if (!p) throw new EmberError("ember: out of WebAssembly memory", 8);
    try {
      return fn(p);
    } finally {
      this._m._free(p);
    }
  }
  _withShape(shape, fn) {
    return this._withScratch(8 * shape.length, (sp) => {
      this._heap(BigInt64Array, sp, shape.length).set(shape.map((v) => BigInt(v)));
      return fn(sp);
    });
  }
  _withString(s, fn) {
    const n = this._m.lengthBytesUTF8(s) + 1;
    return this._withScratch(n, (p) => {
      this._m.stringToUTF8(s, p, n);
      return fn(p);
    });
  }
  // Runs `call(outPtr)` and reads the value it wrote there.
  _call(name, call, bytes, type) {
    return this._withScratch(bytes, (p) => {
      this._check(call(p));
      if (type === "i64") return this._heap(BigInt64Array, p, 1)[0];
      if (type === "float") return this._heap(Float32Array, p, 1)[0];
      return this._heap(Int32Array, p, 1)[0];
    });
  }
  _out(call, Cls) { return new Cls(this, this._call("", call, 4, "i32")); }
  _op2(name, a, b) {
    return this._out((p) => this._m["_" + name](a.ptr, b.ptr, p), Tensor);
  }
}

/** Loads ember's WebAssembly module. `threads`: "auto" (the pthreads build when the page is
 *  cross-origin isolated, so SharedArrayBuffer exists), true or false. `training`: false asks
 *  for the smallest module that runs models (single-threaded, that is ember-infer: no
 *  gradients, optimizers or writer; the pthreads build has them all). `baseUrl`: where
 *  ember-st.js / ember-mt.js / ember-infer.js and their .wasm files are. */
export async function loadEmber({ threads = "auto", baseUrl = "./", training = true } = {}) {
  const isolated = typeof crossOriginIsolated !== "undefined" ? crossOriginIsolated
                                                              : typeof SharedArrayBuffer !== "undefined";
  const mt = threads === "auto" ? isolated : Boolean(threads);
  const name = mt ? "mt" : training ? "st" : "infer";
  const url = new URL(`ember-${name}.js`, new URL(baseUrl, globalThis.location?.href ?? import.meta.url)).href;
  const factory = await loadFactory(url);
  // Node 20's fetch cannot read file: URLs, so under node the .wasm comes as bytes.
  const wasmBinary = typeof document === "undefined" && url.startsWith("file:")
      ? (await import("node:fs")).readFileSync(new URL(`ember-${name}.wasm`, url)) : undefined;
  // The pthreads build starts POOL workers with the module; ember's thread pool is sized to
  // them (a thread beyond the pool would only start once the page yields).
  const POOL = 4;
  const hw = globalThis.navigator?.hardwareConcurrency ?? 1;
  const module = await factory({
    locateFile: (f) => new URL(f, url).href, mainScriptUrlOrBlob: url, wasmBinary,
    preRun: [(m) => { m.ENV.EMBER_NUM_THREADS = String(mt ? Math.max(1, Math.min(hw, POOL)) : 1); }],
  });
  return new Ember(module, mt, name !== "infer");
}

// emscripten's MODULARIZE output is a classic script defining createEmberModule.
async function loadFactory(url) {
  if (typeof document !== "undefined") {
    if (!globalThis.__emberFactories) globalThis.__emberFactories = {};
    if (!globalThis.__emberFactories[url]) {
      globalThis.__emberFactories[url] = new Promise((resolve, reject) => {
        const s = document.createElement("script");
        s.src = url;
        s.onload = () => resolve(globalThis.createEmberModule);
        s.onerror = () => reject(new EmberError(`ember: cannot load ${url}`, 9));
        document.head.appendChild(s);
      });
    }
    return globalThis.__emberFactories[url];
  }
  const { createRequire } = await import("node:module");
  const { fileURLToPath } = await import("node:url");
  return createRequire(import.meta.url)(fileURLToPath(url));
}
