#!/usr/bin/python3
"""Runs ember's CPU benchmark and PyTorch's peer scripts in the same session, several rounds
interleaved (ember, peers, ember, peers, ...), and prints the median of each side and the ratio
ember/peer (lower is better for times), with the device ember's rows ran on.
Usage: /usr/bin/python3 bench/compare.py [--rounds N] [--filter NAME] [--build build]
           [--peer SCRIPT]... [--device flex|cpu|cpu_eager] [--clock wall|cpu]
--clock cpu times both sides in process CPU time (BENCH_CLOCK=cpu): on a shared machine, at
THREADS=1, the work each side does without the time it waited for a core.
An ember row `name@device` (a row pinned to a device, e.g. `matmul_f32_2048@cpu`) is compared with
the peer row `name`; peer rows `name[library]` (several libraries doing the same work, e.g.
`matmul_f32_2048[openblas]`) are each compared, and, when there are several, so is their best."""
import argparse, json, os, statistics, subprocess, sys, tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--filter", default="")
ap.add_argument("--build", default="build")
ap.add_argument("--peer", action="append", help="peer script (repeatable; default: ../shared/peers/torch_cpu.py)")
ap.add_argument("--device", default=os.environ.get("EMBER_BENCH_DEVICE", "flex"))
ap.add_argument("--clock", choices=["wall", "cpu"], default="wall")
args = ap.parse_args()
peers = args.peer or [os.path.join(os.path.dirname(__file__), "..", "..", "shared", "peers", "torch_cpu.py")]
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
        for script in peers:
            subprocess.run(["/usr/bin/python3", script], env=e, check=True, stdout=subprocess.DEVNULL)
            for k, v in json.load(open(os.path.join(d, "torch_cpu.json"))).items():
                peer.setdefault(k, []).append(v)
print("%-32s %-9s %12s %-36s %12s %8s" % ("workload", "device", "ember ms", "peer", "peer ms", "ratio"))
for k in ours:
    o = statistics.median(ours[k])
    base, _, pinned = k.partition("@")
    dev = pinned or args.device
    match = {p: statistics.median(v) for p, v in peer.items() if p.split("[")[0] == base}
    if not match:
        print("%-32s %-9s %12.3f %-36s %12s %8s" % (k, dev, o, "-", "-", "-"))
        continue
    if len(match) > 1:
        best = min(match, key=match.get)
        match["best (" + best + ")"] = match[best]
    for p, ms in match.items():
        print("%-32s %-9s %12.3f %-36s %12.3f %8.2f" % (k, dev, o, p, ms, o / ms))
