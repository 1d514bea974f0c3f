// onnxruntime-node (1.30, CPU execution provider) beside ember::onnx: the peer rows of
// bench/onnx.cpp, and a runner that the ONNX tests use to check ember's outputs against
// onnxruntime's. Run by bench/peers/onnxruntime_peer.py (the ember-bench peer) and by
// tests/onnx/ort_test.cpp; needs `scripts/node-deps.sh` (npm ci in this folder) first.
//
//   node onnxruntime_peer.js bench DIR          times the rows on DIR's models, writes $OUT/onnxruntime.json
//   node onnxruntime_peer.js run MODEL IN OUT   runs MODEL on IN (JSON) and writes OUT (JSON)
//
// IN is {"name": {"dims": [...], "data": [...]}} (float32 inputs); OUT is the same shape for
// every output. Sessions: THREADS intra-op threads (default 2, not spinning), 1 inter-op
// thread, sequential execution, graph optimisation level "all", CPU execution provider only.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

const threads = parseInt(process.env.THREADS || '2', 10);
const sessionOptions = {
  executionProviders: ['cpu'],
  intraOpNumThreads: threads,
  interOpNumThreads: 1,
  executionMode: 'sequential',
  graphOptimizationLevel: 'all',
};
// The intra-op workers wait passively (session.intra_op.allow_spinning = 0), as the torch peers
// set OMP_WAIT_POLICY=PASSIVE: on a loaded 2-core machine onnxruntime's default, spinning, made
// ResNet-18 and MobileNetV2 2-3x slower. ORT_SPINNING=1 keeps onnxruntime's default.
if (process.env.ORT_SPINNING !== '1')
  sessionOptions.extra = {session: {intra_op: {allow_spinning: '0'}}};

function now() {
  if (process.env.BENCH_CLOCK === 'cpu') {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  }
  return Number(process.hrtime.bigint()) / 1e6;
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

// The rows the run asked for (BENCH_ROWS) that match BENCH_FILTER (as peer_common.py does).
function wanted(name) {
  const rows = process.env.BENCH_ROWS;
  if (rows && !rows.split(',').includes(name)) return false;
  const filter = process.env.BENCH_FILTER;
  if (filter && !filter.split('|').some((p) => name.includes(p))) return false;
  return true;
}

async function bench(results, name, fn, warm, iters) {
  if (!wanted(name)) return;
  for (let i = 0; i < warm; ++i) await fn();
  const t = [];
  for (let i = 0; i < iters; ++i) {
    const t0 = now();
    await fn();
    t.push(now() - t0);
  }
  results[name] = median(t);
}

function randomInput(dims) {
  const n = dims.reduce((a, b) => a * b, 1);
  const data = new Float32Array(n);
  let s = 12345;
  for (let i = 0; i < n; ++i) {
    s = (s * 1103515245 + 12345) % 2147483648;
    data[i] = s / 2147483648 - 0.5;
  }
  return new ort.Tensor('float32', data, dims);
}

async function benchRows(dir) {
  const results = {};
  for (const [row, file] of [['onnx_resnet18_b1', 'resnet18.onnx'],
                             ['onnx_mobilenet_v2_b1', 'mobilenet_v2.onnx']]) {
    if (!wanted(row)) continue;
    const session = await ort.InferenceSession.create(path.join(dir, file), sessionOptions);
    const feeds = {[session.inputNames[0]]: randomInput([1, 3, 224, 224])};
    await bench(results, row, () => session.run(feeds), 3, 10);
    await session.release();
  }
  // Creating a session on a 100 MiB model (external data): reading, checking and optimising the
  // graph, weights included; nothing is run.
  await bench(results, 'onnx_load_100MB', async () => {
    const s = await ort.InferenceSession.create(path.join(dir, 'matmul_100MB.onnx'), sessionOptions);
    await s.release();
  }, 1, 5);
  // The same followed by one batch-1 run (bench/onnx.cpp's onnx_load_run_100MB).
  await bench(results, 'onnx_load_run_100MB', async () => {
    const s = await ort.InferenceSession.create(path.join(dir, 'matmul_100MB.onnx'), sessionOptions);
    await s.run({x: randomInput([1, 5120])});
    await s.release();
  }, 1, 5);
  const out = process.env.OUT || '/tmp';
  fs.writeFileSync(path.join(out, 'onnxruntime.json'), JSON.stringify(results) + '\n');
  for (const [k, v] of Object.entries(results)) console.log(`${k}: ${v.toFixed(3)} ms`);
}

async function runModel(model, inPath, outPath) {
  const session = await ort.InferenceSession.create(model, sessionOptions);
  const given = JSON.parse(fs.readFileSync(inPath, 'utf8'));
  const feeds = {};
  for (const [name, v] of Object.entries(given))  // float32 unless the input says int64
    feeds[name] = v.type === 'int64'
        ? new ort.Tensor('int64', BigInt64Array.from(v.data, (x) => BigInt(x)), v.dims)
        : new ort.Tensor('float32', Float32Array.from(v.data), v.dims);
  const got = await session.run(feeds);
  const out = {};
  for (const name of session.outputNames) {
    const t = got[name];
    out[name] = {dims: Array.from(t.dims, Number), data: Array.from(t.data, Number)};
  }
  fs.writeFileSync(outPath, JSON.stringify(out) + '\n');
}

async function main() {
  const [mode, ...args] = process.argv.slice(2);
  if (mode === 'bench' && args.length === 1) return benchRows(args[0]);
  if (mode === 'run' && args.length === 3) return runModel(...args);
  if (mode === 'version') return console.log(ort.env.versions.node);
  console.error('usage: onnxruntime_peer.js bench DIR | run MODEL IN.json OUT.json | version');
  process.exit(2);
}

main().catch((e) => {
  console.error(`onnxruntime_peer.js: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
