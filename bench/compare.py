#!/usr/bin/python3
"""The old side-by-side runner's command line, kept for the commands written with it: it runs
ember-bench (tools/ember-bench, docs/bench.md), which runs ember's rows and the peer scripts in
the same invocation, rounds interleaved, and prints the medians and ember/peer ratios.
Usage: /usr/bin/python3 bench/compare.py [--rounds N] [--filter NAME] [--build build]
           [--peer SCRIPT]... [--device flex|cpu|cpu_eager|cuda|cuda_eager] [--clock wall|cpu]
           [-- EMBER-BENCH OPTIONS...]
is `BUILD/tools/ember-bench/ember-bench all --filter NAME --device DEVICE --rounds N
--peer SCRIPT... --clock CLOCK --no-history` (default peer: torch_cpu, the shared torch_cpu.py; give
--history FILE after `--` to record the run). THREADS (default 2) sets both sides' threads."""
import argparse, os, sys

ap = argparse.ArgumentParser()
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--filter", default="")
ap.add_argument("--build", default="build")
ap.add_argument("--peer", action="append", help="peer script or name (repeatable; default: torch_cpu)")
ap.add_argument("--device", default=os.environ.get("EMBER_BENCH_DEVICE", "flex"))
ap.add_argument("--clock", choices=["wall", "cpu"], default="wall")
ap.add_argument("rest", nargs="*", help="options passed on to ember-bench (after --)")
args = ap.parse_args()
peers = args.peer or ["torch_cpu"]  # ember-bench finds it in the shared/peers folder
cmd = [os.path.join(args.build, "tools", "ember-bench", "ember-bench"), "all", "--device", args.device,
       "--rounds", str(args.rounds), "--clock", args.clock, "--threads", os.environ.get("THREADS", "2"),
       "--no-history"]
if args.filter:
    cmd += ["--filter", args.filter]
for p in peers:
    cmd += ["--peer", p]
cmd += args.rest
if not os.access(cmd[0], os.X_OK):
    sys.exit(f"compare.py: no {cmd[0]}; build it with `cmake --build {args.build} --target ember_bench_tool`")
sys.stdout.flush()
os.execv(cmd[0], cmd)
