// The web demo: the Fashion-MNIST CNN trained natively (README demo) runs in the page on ember's
// WebAssembly build; a second tab trains a small MLP in the page. window.emberDemo is what the
// browser test (tests/web/browser_test.mjs) drives.
import { loadEmber } from "./lib/ember.js";

const CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
                 "Sneaker", "Bag", "Ankle boot"];
const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);

async function fetchBytes(url) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`fetching ${url}: HTTP ${r.status}`);
  return new Uint8Array(await r.arrayBuffer());
}

// The pad's 280x280 drawing as a [1,1,28,28] input: each 10x10 block averaged, 0..1.
function padPixels(ctx) {
  const src = ctx.getImageData(0, 0, 280, 280).data;
  const out = new Float32Array(784);
  for (let y = 0; y < 28; ++y)
    for (let x = 0; x < 28; ++x) {
      let s = 0;
      for (let dy = 0; dy < 10; ++dy)
        for (let dx = 0; dx < 10; ++dx) s += src[((y * 10 + dy) * 280 + x * 10 + dx) * 4];
      out[y * 28 + x] = s / (100 * 255);
    }
  return out;
}

function drawImage(ctx, pixels /* 784 floats in 0..1 */) {
  const img = ctx.createImageData(280, 280);
  for (let i = 0; i < 280 * 280; ++i) {
    const v = Math.round(pixels[Math.floor(i / 2800) * 28 + Math.floor((i % 280) / 10)] * 255);
    img.data.set([v, v, v, 255], i * 4);
  }
  ctx.putImageData(img, 0, 0);
}

async function main() {
  const threads = params.has("threads") ? params.get("threads") === "1" : "auto";
  // The classifier needs no gradients: on a page that is not isolated that is ember-infer, the
  // smallest module; the Train tab loads a module with training when it first runs.
  const em = await loadEmber({ threads, baseUrl: "./wasm/", training: false });
  let trainer = em.training ? Promise.resolve(em) : null;
  const trainingEmber = () => (trainer ??= loadEmber({ threads, baseUrl: "./wasm/" }));
  const [weights, images, labels, expected] = await Promise.all([
    em.loadSafetensors(fetch("./data/model.safetensors")),
    fetchBytes("./data/images.u8"), fetchBytes("./data/labels.u8"),
    fetchBytes("./data/expected.f32").catch(() => null)]);
  const net = em.fashionCnn().eval();
  net.load(weights);
  weights.dispose();
  const count = labels.length;
  const image = (i) => Float32Array.from(images.subarray(i * 784, (i + 1) * 784), (v) => v / 255);
  $("status").textContent = `ember ${em.version} · ${em.threaded ? `pthreads build, ${em.numThreads} threads` : em.training ? "single-threaded build" : "single-threaded inference build"}` +
      ` · ${count} test images · ${crossOriginIsolated ? "cross-origin isolated" : "not isolated"}`;

  const pad = $("pad"), ctx = pad.getContext("2d", { willReadFrequently: true });
  let current = -1;
  function classify(pixels) {
    const t0 = performance.now();
    const probs = net.predict(pixels, [1, 1, 28, 28], { softmax: true });
    const ms = performance.now() - t0;
    const order = [...probs.keys()].sort((a, b) => probs[b] - probs[a]).slice(0, 3);
    $("top3").innerHTML = order.map((k) =>
        `<li data-class="${k}">${CLASSES[k]} <b>${(probs[k] * 100).toFixed(1)}%</b>` +
        `<span class="bar" style="width:${Math.round(probs[k] * 120)}px"></span></li>`).join("");
    $("latency").textContent = `inference ${ms.toFixed(2)} ms`;
    $("truth").textContent = current >= 0 ? `test image #${current}: ${CLASSES[labels[current]]}` : "";
    return { probs, order, ms };
  }
  function show(i) {
    current = i;
    drawImage(ctx, image(i));
    return classify(image(i));
  }

  // Drawing: a round white brush; classify as the stroke goes.
  let drawing = false;
  const at = (e) => { const r = pad.getBoundingClientRect(); return [e.clientX - r.left, e.clientY - r.top]; };
  pad.addEventListener("pointerdown", (e) => { drawing = true; current = -1; pad.setPointerCapture(e.pointerId); stroke(e); });
  pad.addEventListener("pointermove", (e) => drawing && stroke(e));
  pad.addEventListener("pointerup", () => { drawing = false; classify(padPixels(ctx)); });
  function stroke(e) {
    const [x, y] = at(e);
    ctx.fillStyle = "#fff";
    ctx.beginPath();
    ctx.arc(x, y, 12, 0, 2 * Math.PI);
    ctx.fill();
  }
  $("clear").onclick = () => { ctx.fillStyle = "#000"; ctx.fillRect(0, 0, 280, 280); current = -1; $("top3").innerHTML = ""; };
  $("pick").onclick = () => show(Math.floor(Math.random() * count));
  for (const b of document.querySelectorAll(".tab"))
    b.onclick = () => {
      for (const x of document.querySelectorAll(".tab, .panel")) x.classList.remove("active");
      b.classList.add("active");
      $(b.dataset.tab).classList.add("active");
    };

  // Warm batch-1 latency: the median over groups of 10 runs (a page that is not cross-origin
  // isolated gets performance.now() in 0.1 ms steps), after `warm` runs.
  function benchmark(n = 50, warm = 5) {
    const x = image(0), times = [];
    for (let i = 0; i < warm; ++i) net.predict(x, [1, 1, 28, 28]);
    for (let g = 0; g < Math.ceil(n / 10); ++g) {
      const t0 = performance.now();
      for (let i = 0; i < 10; ++i) net.predict(x, [1, 1, 28, 28]);
      times.push((performance.now() - t0) / 10);
    }
    times.sort((a, b) => a - b);
    return times[Math.floor(times.length / 2)];
  }

  // Train tab: an MLP on the demo's images, in the page.
  $("train-start").onclick = () => trainMlp(200, (line) => ($("train-log").textContent += line + "\n"));
  async function trainMlp(steps, log = () => {}) {
    const tem = await trainingEmber();
    const mlp = tem.mlp([784, 64, 10]);
    const x = tem.tensor(Float32Array.from(images.subarray(0, count * 784), (v) => v / 255), [count, 784]);
    const y = tem.tensor(BigInt64Array.from(labels, (v) => BigInt(v)), [count]);
    const losses = [];
    const t0 = performance.now();
    try {
      for (let s = 0; s < steps; ++s) {
        losses.push(mlp.trainStepSgd(x, y, 0.05));
        if (s % 20 === 0 || s === steps - 1) log(`step ${s}: loss ${losses[s].toFixed(4)}`);
      }
      mlp.eval();
      const probs = mlp.predict(x.toFloat32Array(), [count, 784]);
      let correct = 0;
      for (let i = 0; i < count; ++i) {
        const row = probs.subarray(i * 10, i * 10 + 10);
        correct += row.indexOf(Math.max(...row)) === labels[i];
      }
      log(`train accuracy ${(100 * correct / count).toFixed(1)}% in ${(performance.now() - t0).toFixed(0)} ms`);
      return { losses, accuracy: correct / count };
    } finally {
      x.dispose(); y.dispose(); mlp.dispose();
    }
  }

  // The same model in onnxruntime-web (its wasm backend) on the same page: warm batch-1 median,
  // and its largest difference from ember's softmax over the first `check` images.
  async function benchmarkOrt(n = 50, warm = 5, threads = 1, check = 20) {
    const ort = await import("./ort/ort.wasm.min.mjs");
    ort.env.wasm.numThreads = threads;
    ort.env.wasm.wasmPaths = new URL("./ort/", location.href).href;
    const session = await ort.InferenceSession.create("./data/model.onnx", { executionProviders: ["wasm"] });
    const run = async (px) => (await session.run({ input: new ort.Tensor("float32", px, [1, 1, 28, 28]) })).logits.data;
    let maxDiff = 0;
    for (let i = 0; i < Math.min(check, count); ++i) {
      const l = await run(image(i)), m = Math.max(...l), e = l.map((v) => Math.exp(v - m));
      const z = e.reduce((a, b) => a + b), mine = net.predict(image(i), [1, 1, 28, 28], { softmax: true });
      for (let k = 0; k < 10; ++k) maxDiff = Math.max(maxDiff, Math.abs(e[k] / z - mine[k]));
    }
    const x = image(0), times = [];
    for (let i = 0; i < warm; ++i) await run(x);
    for (let g = 0; g < Math.ceil(n / 10); ++g) {
      const t0 = performance.now();
      for (let i = 0; i < 10; ++i) await run(x);
      times.push((performance.now() - t0) / 10);
    }
    times.sort((a, b) => a - b);
    await session.release();
    return { median: times[Math.floor(times.length / 2)], maxDiff };
  }

  window.emberDemo = {
    em, net, count, labels, expected: expected && new Float32Array(expected.buffer),
    show, benchmark, benchmarkOrt, trainMlp, image,
    // Every test image's softmax, batch 1, as the page runs them.
    predictAll() {
      const out = new Float32Array(count * 10);
      for (let i = 0; i < count; ++i) out.set(net.predict(image(i), [1, 1, 28, 28], { softmax: true }), i * 10);
      return out;
    },
  };
  show(0);
  $("bench").textContent = "";
  document.body.dataset.ready = "1";
}

main().catch((e) => {
  $("status").textContent = "error: " + e.message;
  document.body.dataset.ready = "error";
  console.error(e);
});
