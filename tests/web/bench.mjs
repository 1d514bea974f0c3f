// The web demo's speed figures in headless chromium, side by side in one run (docs/web.md):
// warm batch-1 CNN latency of ember's single-threaded and pthreads builds, of the build without
// SIMD (when build-wasm-nosimd exists), and of onnxruntime-web's wasm backend on the same page.
// Usage: node tests/web/bench.mjs DATA_DIR  (DATA_DIR from the `web` tool, with model.onnx from
// examples/web/export_onnx.py); run from the repository root.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const root = process.cwd(), data = path.resolve(process.argv[2]);
const { chromium } = createRequire(path.join(root, "web/node_modules/x.js"))("playwright-core");

async function serve(wasm) {
  const p = spawn("python3", ["examples/web/serve.py", "--port", "0", "--wasm", wasm, "--data", data],
                  { stdio: ["ignore", "pipe", "inherit"] });
  const url = await new Promise((r) => p.stdout.once("data", (d) => r(String(d).trim().replace(/\/iso\/$/, ""))));
  return { url, stop: () => p.kill() };
}

const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", headless: true,
                                        args: ["--no-sandbox", "--disable-gpu"] });
const rows = [];
async function measure(base, mode, label, ort) {
  const page = await browser.newPage();
  await page.goto(`${base}/${mode}/`);
  await page.waitForFunction(() => document.body.dataset.ready, null, { timeout: 60000 });
  const r = await page.evaluate(async (ort) => {
    const d = window.emberDemo, threads = d.em.numThreads;
    const out = { threads, ember: d.benchmark(200, 20) };
    if (ort) Object.assign(out, { ort: await d.benchmarkOrt(200, 20, threads) });
    return out;
  }, ort);
  rows.push({ label, threads: r.threads, ember_ms: r.ember.toFixed(3),
              ort_ms: r.ort ? r.ort.median.toFixed(3) : "",
              ratio: r.ort ? (r.ember / r.ort.median).toFixed(2) : "",
              ort_max_diff: r.ort ? r.ort.maxDiff.toExponential(1) : "" });
  await page.close();
}
try {
  const simd = await serve("build-wasm/web");
  const ort = existsSync(path.join(data, "model.onnx"));
  await measure(simd.url, "plain", "ember infer (SIMD)", ort);
  if (existsSync("build-wasm/web/ember-mt.js")) await measure(simd.url, "iso", "ember mt (SIMD)", ort);
  simd.stop();
  if (existsSync("build-wasm-nosimd/web/ember-st.js")) {
    const plain = await serve("build-wasm-nosimd/web");
    await measure(plain.url, "plain", "ember st (no SIMD)", false);
    plain.stop();
  }
} finally {
  await browser.close();
}
console.table(rows);
