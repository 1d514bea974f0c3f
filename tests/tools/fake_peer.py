"""A stand-in peer for tests/tools/ember_bench_test.py: writes fixed rows for the smoke suite
without timing anything, or misbehaves as $FAKE_PEER_MODE says (hang, crash, fail, nojson, badjson).
Each run appends its environment's THREADS, BENCH_ROWS and BENCH_CLOCK to $FAKE_PEER_LOG."""
import json, os, signal, sys

mode = os.environ.get("FAKE_PEER_MODE", "ok")
if os.environ.get("FAKE_PEER_LOG"):
    with open(os.environ["FAKE_PEER_LOG"], "a") as f:
        f.write(json.dumps({k: os.environ.get(k) for k in ("THREADS", "BENCH_ROWS", "BENCH_CLOCK")}) + "\n")
print("fake peer running in mode", mode, flush=True)
if mode == "hang":
    import time
    time.sleep(120)
if mode == "crash":
    os.kill(os.getpid(), signal.SIGSEGV)
if mode == "fail":
    print("fake peer: something went wrong", file=sys.stderr)
    sys.exit(7)
out = os.environ.get("OUT", "/tmp")
if mode == "badjson":
    open(os.path.join(out, "torch_cpu.json"), "w").write("{not json")
elif mode != "nojson":
    rows = {"smoke_add_4k": 0.5, "smoke_matmul_32[liba]": 0.25, "smoke_matmul_32[libb]": 0.125}
    json.dump(rows, open(os.path.join(out, "torch_cpu.json"), "w"))
