#!/usr/bin/python3
"""Runs ember's CPU benchmark and PyTorch's peer scripts in the same session, several rounds,
and prints the median of each side and the ratio ember/peer (lower is better for times).
Usage: /usr/bin/python3 bench/compare.py [--rounds N] [--filter NAME] [--build build] [--peer SCRIPT]...
An ember row `name@device` (a row pinned to a device, e.g. `matmul_f32_2048@cpu`) is compared with
the peer row `name`; peer rows `name[library]` (several libraries doing the same work, e.g.
`matmul_f32_2048[openblas]`) are each compared, and, when there are several, so is their best."""
import argparse, json, os, statistics, subprocess, sys, tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--filter", default="")
ap.add_argument("--build", default="build")
ap.add_argument("--peer", action="append", help="peer script (repeatable; default: ../shared/peers/torch_cpu.py)")
args = ap.parse_args()
peers = args.peer or [os.path.join(os.path.dirname(__file__), "..", "..", "shared", "peers", "torch_cpu.py")]
env = dict(os.environ, THREADS=os.environ.get("THREADS", "2"), EMBER_NUM_THREADS=os.environ.get("THREADS", "2"))
ours, peer = {}, {}
for r in range(args.rounds):
    with tempfile.TemporaryDirectory() as d:
        e = dict(env, OUT=d)
        subprocess.run([os.path.join(args.build, "bench", "ember_bench"), args.filter], env=e, check=True,
                       stdout=subprocess.DEVNULL)
        for k, v in json.load(open(os.path.join(d, "ember_cpu.json"))).items():
            ours.setdefault(k, []).append(v)
        for script in peers:
            subprocess.run(["/usr/bin/python3", script], env=e, check=True, stdout=subprocess.DEVNULL)
            for k, v in json.load(open(os.path.join(d, "torch_cpu.json"))).items():
                peer.setdefault(k, []).append(v)
print("%-32s %12s %-36s %12s %8s" % ("workload", "ember ms", "peer", "peer ms", "ratio"))
for k in ours:
    o = statistics.median(ours[k])
    base = k.split("@")[0]
    match = {p: statistics.median(v) for p, v in peer.items() if p.split("[")[0] == base}
    if not match:
        print("%-32s %12.3f %-36s %12s %8s" % (k, o, "-", "-", "-"))
        continue
    if len(match) > 1:
        best = min(match, key=match.get)
        match["best (" + best + ")"] = match[best]
    for p, ms in match.items():
        print("%-32s %12.3f %-36s %12.3f %8.2f" % (k, o, p, ms, o / ms))
