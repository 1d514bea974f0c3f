// The web demo in a real browser: Playwright (npm playwright-core, web/node_modules) drives
// Debian's headless chromium against examples/web/serve.py, once cross-origin isolated (the
// pthreads build) and once not (the single-threaded build). In each: the page loads with no
// console errors, its predictions on the test images equal the native build's (examples/web's
// `web` tool) within 1e-5, the JS API's errors carry ember's messages, training an MLP in the page
// lowers its loss, and a screenshot of the page shows the image it drew and its top-3.
// Usage: node browser_test.mjs REPO_ROOT WASM_DIR DATA_DIR OUT_DIR
// Exit 0: passed; 1: failed; 77: skipped (what is missing is printed).
import { spawn } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const [root, wasmDir, dataDir, outDir] = process.argv.slice(2);
const skip = (why) => { console.log(`SKIPPED: ${why}`); process.exit(77); };
const chromium = process.env.EMBER_CHROMIUM ?? "/usr/bin/chromium";
if (!existsSync(chromium)) skip(`no chromium at ${chromium} (Debian's chromium; scripts/deps.sh)`);
const modules = path.join(root, "web", "node_modules");
if (!existsSync(path.join(modules, "playwright-core")))
  skip(`no playwright-core in ${modules} (scripts/node-deps.sh installs it)`);
// EMBER_WEB_MODES=plain (or iso) runs one of the two (default: both).
const modes = (process.env.EMBER_WEB_MODES ?? "iso,plain").split(",");
const needed = [...(modes.includes("plain") ? ["ember-infer.js", "ember-infer.wasm", "ember-st.js", "ember-st.wasm"] : []),
                ...(modes.includes("iso") ? ["ember-mt.js", "ember-mt.wasm"] : [])];
for (const f of needed)
  if (!existsSync(path.join(wasmDir, f)))
    skip(`no ${f} in ${wasmDir} (build it: cmake --preset wasm && cmake --build build-wasm; ` +
         `needs Debian's emscripten)`);
const { chromium: pw } = createRequire(path.join(modules, "x.js"))("playwright-core");

let failures = 0;
const check = (ok, what) => {
  if (!ok) { console.error(`FAIL: ${what}`); ++failures; } else console.log(`ok: ${what}`);
};

// The server prints its URL once it listens.
const server = spawn("python3", [path.join(root, "examples/web/serve.py"), "--port", "0",
                                 "--wasm", wasmDir, "--data", dataDir], { stdio: ["ignore", "pipe", "inherit"] });
const base = await new Promise((resolve, reject) => {
  server.stdout.on("data", (d) => resolve(String(d).trim().replace(/\/iso\/$/, "")));
  server.on("exit", (c) => reject(new Error(`serve.py exited with ${c}`)));
});

const browser = await pw.launch({ executablePath: chromium, headless: true,
                                  args: ["--no-sandbox", "--disable-gpu"] });
try {
  for (const mode of modes) {
    const page = await browser.newPage({ viewport: { width: 800, height: 600 } });
    const errors = [];
    page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
    page.on("pageerror", (e) => errors.push(String(e)));
    const t0 = Date.now();
    await page.goto(`${base}/${mode}/`);
    await page.waitForFunction(() => document.body.dataset.ready, null, { timeout: 30000 });
    const state = await page.evaluate(() => ({
      ready: document.body.dataset.ready, status: document.getElementById("status").textContent,
      threaded: window.emberDemo?.em.threaded, isolated: crossOriginIsolated,
      training: window.emberDemo?.em.training,
      threads: window.emberDemo?.em.numThreads }));
    console.log(`[${mode}] loaded in ${Date.now() - t0} ms: ${state.status}`);
    check(state.ready === "1", `[${mode}] the page is ready`);
    check(state.threaded === (mode === "iso") && state.isolated === (mode === "iso"),
          `[${mode}] ${mode === "iso" ? "isolated: the pthreads build" : "not isolated: the single-threaded build"}`);
    check(state.training === (mode === "iso"),
          `[${mode}] the classifier runs on ${mode === "iso" ? "the pthreads build (training built in)" : "ember-infer, the inference-only module"}`);

    // Predictions vs the native build's, image by image (batch 1).
    const cmp = await page.evaluate(() => {
      const d = window.emberDemo, got = d.predictAll(), want = d.expected;
      let maxDiff = 0, same = 0;
      for (let i = 0; i < got.length; ++i) maxDiff = Math.max(maxDiff, Math.abs(got[i] - want[i]));
      for (let i = 0; i < d.count; ++i) {
        const a = got.subarray(i * 10, i * 10 + 10), b = want.subarray(i * 10, i * 10 + 10);
        same += a.indexOf(Math.max(...a)) === b.indexOf(Math.max(...b));
      }
      return { n: d.count, maxDiff, same, len: got.length };
    });
    console.log(`[${mode}] ${cmp.n} images: max |p_wasm - p_native| = ${cmp.maxDiff.toExponential(2)}`);
    check(cmp.n === 100 && cmp.len === 1000, `[${mode}] 100 test images ran`);
    check(cmp.maxDiff <= 1e-5, `[${mode}] predictions equal native within 1e-5`);
    check(cmp.same === cmp.n, `[${mode}] every top-1 equals native's`);

    check(errors.length === 0, `[${mode}] no console errors while loading and predicting${errors.length ? ": " + errors.join(" | ") : ""}`);
    const before = errors.length;
    // The JS API: ember's errors as EmberError with its message; dispose() is final.
    const api = await page.evaluate(async () => {
      const em = window.emberDemo.em, out = {};
      const a = em.tensor(new Float32Array(6), [2, 3]), b = em.tensor(new Float32Array(4), [2, 2]);
      try { a.matmul(b); } catch (e) { out.matmul = `${e.name}|${e.statusName}|${e.message}`; }
      try { em.stateDictFromBytes(new Uint8Array([1, 2, 3])); } catch (e) { out.bytes = e.message; }
      try { await em.loadSafetensors(fetch("./data/missing.safetensors")); } catch (e) { out.fetch = e.message; }
      a.dispose(); a.dispose();
      try { a.shape; } catch (e) { out.disposed = e.message; }
      const t = em.tensor(new Float32Array([1, -2, 3]), [3]).relu();
      out.relu = Array.from(t.toFloat32Array());
      t.dispose(); b.dispose();
      // The build's dtype subset (cmake/wasm.cmake): f64 kernels are left out, casts stay.
      const d = em.tensor(new Float64Array([1, -2]), [2]);
      try { d.relu().dispose(); } catch (e) { out.f64 = `${e.statusName}|${e.message}`; }
      const f = d.to("float32"), r = f.relu();
      out.f64cast = Array.from(r.toFloat32Array());
      d.dispose(); f.dispose(); r.dispose();
      // The inference-only module refuses training by name.
      if (!em.training) {
        const m = em.mlp([4, 2]), x = em.tensor(new Float32Array(4), [1, 4]);
        const y = em.tensor(new BigInt64Array(1), [1]);
        try { m.trainStepSgd(x, y, 0.1); } catch (e) { out.train = `${e.statusName}|${e.message}`; }
        m.dispose(); x.dispose(); y.dispose();
      }
      return out;
    });
    check(/^EmberError\|EMBER_ERR_SHAPE\|ember_matmul: \[matmul\]/.test(api.matmul ?? ""),
          `[${mode}] a bad matmul throws EmberError naming the op (${api.matmul})`);
    check(/ember_state_dict_load_bytes: .*<memory>/.test(api.bytes ?? ""), `[${mode}] bad bytes: ${api.bytes}`);
    check(/HTTP 404/.test(api.fetch ?? ""), `[${mode}] a failed fetch: ${api.fetch}`);
    check(/after dispose/.test(api.disposed ?? ""), `[${mode}] use after dispose() throws`);
    check(JSON.stringify(api.relu) === "[1,0,3]", `[${mode}] relu through the JS API`);
    check(/^EMBER_ERR_DTYPE\|.*\[relu\] not supported for dtype float64 \(this build's flex kernels take only /.test(api.f64 ?? ""),
          `[${mode}] a dtype left out of the build is refused by name (${api.f64})`);
    check(JSON.stringify(api.f64cast) === "[1,0]", `[${mode}] f64 casts to f32 and runs`);
    if (mode === "plain")
      check(/^EMBER_ERR_NOT_IMPLEMENTED\|ember_module_train_step_sgd: .*ember-infer is the inference-only module/.test(api.train ?? ""),
            `[${mode}] ember-infer refuses a training step by name (${api.train})`);

    // Training an MLP in the page lowers the loss (on the plain page the Train tab loads
    // ember-st for it).
    const tr = await page.evaluate(() => window.emberDemo.trainMlp(30));
    check(tr.losses[29] < tr.losses[0] * 0.7,
          `[${mode}] MLP training in the page: loss ${tr.losses[0].toFixed(3)} -> ${tr.losses[29].toFixed(3)}`);

    // The drawn result: image #3 on the pad and its top-3, checked in a screenshot.
    const shown = await page.evaluate(() => {
      const r = window.emberDemo.show(3);
      return { top: r.order[0], text: document.querySelector("#top3 li").textContent };
    });
    const want = await page.evaluate(() => {
      const e = window.emberDemo.expected.subarray(30, 40);
      return e.indexOf(Math.max(...e));
    });
    check(shown.top === want, `[${mode}] the page's top-1 for image #3 is native's (${shown.text})`);
    const shot = await page.screenshot({ fullPage: false });
    writeFileSync(path.join(outDir, `web_${mode}.png`), shot);
    const box = await page.locator("#pad").boundingBox();
    const top3box = await page.locator("#top3").boundingBox();
    const pix = await page.evaluate(async ({ png, box, top3box }) => {
      const bytes = Uint8Array.from(atob(png), (c) => c.charCodeAt(0));
      const bmp = await createImageBitmap(new Blob([bytes], { type: "image/png" }));
      const c = new OffscreenCanvas(bmp.width, bmp.height), g = c.getContext("2d");
      g.drawImage(bmp, 0, 0);
      // The pad's 28x28 blocks in the screenshot against the image it was given.
      const img = window.emberDemo.image(3);
      const d = g.getImageData(Math.round(box.x), Math.round(box.y), 280, 280).data;
      let err = 0;
      for (let y = 0; y < 28; ++y)
        for (let x = 0; x < 28; ++x)
          err = Math.max(err, Math.abs(d[((y * 10 + 5) * 280 + x * 10 + 5) * 4] / 255 - img[y * 28 + x]));
      // The top-3 list is drawn: dark text pixels on the light page.
      const t = g.getImageData(Math.round(top3box.x), Math.round(top3box.y),
                               Math.max(1, Math.round(top3box.width)), Math.max(1, Math.round(top3box.height))).data;
      let dark = 0;
      for (let i = 0; i < t.length; i += 4) dark += t[i] < 100 && t[i + 1] < 100;
      return { err, dark, w: bmp.width };
    }, { png: shot.toString("base64"), box, top3box });
    check(pix.err < 0.02, `[${mode}] the screenshot shows image #3 on the pad (max error ${pix.err.toFixed(3)})`);
    check(pix.dark > 50, `[${mode}] the screenshot shows the top-3 list (${pix.dark} text pixels)`);
    // Only the 404 the fetch check asked for (the browser logs it) may follow.
    const later = errors.slice(before).filter((e) => !/status of 404/.test(e));
    check(later.length === 0 && errors.length - before <= 1,
          `[${mode}] no other console errors${later.length ? ": " + later.join(" | ") : ""}`);
    await page.close();
  }
} finally {
  await browser.close();
  server.kill();
}
console.log(failures ? `${failures} checks failed` : "browser test passed");
process.exit(failures ? 1 : 0);
