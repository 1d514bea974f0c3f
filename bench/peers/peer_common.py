"""What ember's own PyTorch peer scripts share: environment (2 threads, OpenBLAS at its best,
passive OpenMP waits), the timing loop and the JSON that ember-bench reads (docs/bench.md).
OpenBLAS 0.3.21 mistakes some AVX-512 CPUs for older ones, so there it is told to use its
SkylakeX kernels; on a CPU without AVX-512 those kernels die with SIGILL, and OpenBLAS's own
choice is kept (on the AVX2-only AMD EPYC it picks Zen, which runs the Haswell kernels; forcing
Haswell measured the same).
OpenMP workers wait passively: torch's OpenMP pool and OpenBLAS's pthread pool share the same
cores, and with GNU OpenMP's default spin-wait an idle OpenMP worker keeps a core from OpenBLAS's
worker, so linear-with-bias and relu took 8-12 ms instead of 0.6 ms and 0.01 ms here."""
import os


def cpu_flags():
    """The first processor's flags in /proc/cpuinfo (empty where there is none)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


if "avx512f" in cpu_flags():
    os.environ.setdefault("OPENBLAS_CORETYPE", "SkylakeX")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import json, statistics, time

import torch

# Debian's torch uses the system BLAS; on the reference BLAS matmul is ~50x slower, which would
# make every ratio against these peers meaningless. Refuse to run on it.
torch.randn(64, 64) @ torch.randn(64, 64)
with open("/proc/self/maps") as _maps:
    if "openblas" not in _maps.read():
        raise SystemExit("peer: torch is not using OpenBLAS (apt-get install libopenblas0-pthread)")

torch.set_num_threads(int(os.environ.get("THREADS", "2")))
torch.manual_seed(0)
res = {}


def wanted(name):
    """Whether ember-bench asked for the row `name` (`name[library]` rows go with `name`):
    $BENCH_ROWS, when set, lists the ember rows of the run (','-separated); $BENCH_FILTER (the run's
    --filter) keeps the names that contain it or one of its '|'-separated parts. A filter's
    `@device` part names ember's pinned rows (`matmul_f32_2048@cpu`), not the peer's."""
    base = name.split("[")[0]
    rows = [r.split("@")[0] for r in os.environ.get("BENCH_ROWS", "").split(",") if r]
    if rows and base not in rows:
        return False
    parts = [p.split("@")[0] for p in os.environ.get("BENCH_FILTER", "").split("|")]
    return any(p in name for p in parts)


def bench(name, fn, warm=3, iters=10):
    """Median milliseconds of fn() over iters calls after warm ones; printed and recorded.
    Rows not wanted() are skipped. With BENCH_CLOCK=cpu the times are the process's CPU time, as
    in ember-bench --clock cpu."""
    if not wanted(name):
        return
    for _ in range(warm):
        fn()
    ts = []
    clock = time.process_time if os.environ.get("BENCH_CLOCK") == "cpu" else time.perf_counter
    for _ in range(iters):
        t = clock()
        fn()
        ts.append((clock() - t) * 1e3)
    res[name] = statistics.median(ts)
    print(f"{name:36s} {res[name]:10.3f} ms", flush=True)


def write():
    """Writes the rows to $OUT/torch_cpu.json (or /tmp), where ember-bench looks."""
    out = os.environ.get("OUT", "/tmp")
    with open(os.path.join(out, "torch_cpu.json"), "w") as f:
        json.dump(res, f, indent=1)
