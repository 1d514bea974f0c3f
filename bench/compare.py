#!/usr/bin/python3
"""Runs ember's CPU benchmark and PyTorch's peer script in the same session, several rounds
interleaved (ember, peer, ember, peer, ...), and prints the median of each side and the ratio
ember/peer (lower is better for times), with the device ember's rows ran on.
Usage: /usr/bin/python3 bench/compare.py [--rounds N] [--filter NAME] [--build build]
           [--peer SCRIPT] [--device flex|cpu|cpu_eager] [--clock wall|cpu]
--clock cpu times both sides in process CPU time (BENCH_CLOCK=cpu): on a shared machine, at
THREADS=1, the work each side does without the time it waited for a core."""
import argparse, json, os, statistics, subprocess, sys, tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--filter", default="")
ap.add_argument("--build", default="build")
ap.add_argument("--peer", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "peers", "torch_cpu.py"))
ap.add_argument("--device", default=os.environ.get("EMBER_BENCH_DEVICE", "flex"))
ap.add_argument("--clock", choices=["wall", "cpu"], default="wall")
args = ap.parse_args()
env = dict(os.environ, THREADS=os.environ.get("THREADS", "2"), EMBER_NUM_THREADS=os.environ.get("THREADS", "2"),
           BENCH_FILTER=args.filter, BENCH_CLOCK=args.clock)
ours, peer = {}, {}
for r in range(args.rounds):
    with tempfile.TemporaryDirectory() as d:
        e = dict(env, OUT=d)
        subprocess.run([os.path.join(args.build, "bench", "ember_bench"), "--device", args.device,
                        args.filter], env=e, check=True, stdout=subprocess.DEVNULL)
        for k, v in json.load(open(os.path.join(d, "ember_cpu.json"))).items():
            ours.setdefault(k, []).append(v)
        subprocess.run(["/usr/bin/python3", args.peer], env=e, check=True, stdout=subprocess.DEVNULL)
        for k, v in json.load(open(os.path.join(d, "torch_cpu.json"))).items():
            peer.setdefault(k, []).append(v)
print("%-32s %-7s %12s %12s %8s" % ("workload", "device", "ember ms", "torch ms", "ratio"))
for k in ours:
    o = statistics.median(ours[k])
    if k in peer:
        p = statistics.median(peer[k])
        print("%-32s %-7s %12.3f %12.3f %8.2f" % (k, args.device, o, p, o / p))
    else:
        print("%-32s %-7s %12.3f %12s %8s" % (k, args.device, o, "-", "-"))
