#!/usr/bin/python3
"""Rewrites tests/data/pending_ops.txt: the registered ops that no golden file covers yet,
keeping the reason already written for each."""
import glob, json, os, re

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.join(here, "..", "..")
src = open(os.path.join(root, "ember/ops/op_list.h")).read()
ops = re.findall(r"X\(([a-z_0-9]+), [A-Za-z]+\)", src[src.index("#define EMBER_OPS"):])
covered = set()
for f in glob.glob(os.path.join(root, "tests/data/*.json")):
    covered |= {c["op"] for c in json.load(open(f))["cases"]}
path = os.path.join(root, "tests/data/pending_ops.txt")
reasons = {}
for line in open(path):
    if line.strip() and not line.startswith("#"):
        name, _, why = line.strip().partition(" ")
        reasons[name] = why
with open(path, "w") as f:
    f.write("# Ops registered without golden cases yet: one per line, with the reason. The conformance\n"
            "# test fails when an op is missing here and has no cases, or is listed here but has cases.\n")
    for op in ops:
        if op not in covered:
            f.write("%s %s\n" % (op, reasons.get(op, "(not yet covered)")))
print("pending:", sum(1 for op in ops if op not in covered))
