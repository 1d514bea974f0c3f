"""Reference values for ember/train/metrics: accuracy, top-k accuracy and precision / recall / F1
(macro, micro, weighted; zero_division -> 0, classes never predicted nor present count as 0 in
the macro mean, as scikit-learn does with labels=range(C)), accumulated over several batches.
Computed here with torch ops from the confusion matrix. Run with Debian's /usr/bin/python3;
writes tests/data/train/metrics.json.
"""
import json
import os

import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "train",
                   "metrics.json")


def class_scores(tp, predicted, truth):
    """Per-class precision, recall, F1 with 0 where a denominator is 0."""
    def div(a, b):
        return torch.where(b > 0, a / b.clamp(min=1), torch.zeros_like(a))
    return {"precision": div(tp, predicted), "recall": div(tp, truth),
            "f1": div(2 * tp, predicted + truth)}


def expected(batches, c, ks):
    preds = torch.cat([b["logits"].argmax(1) for b in batches])
    target = torch.cat([b["index"] for b in batches])
    logits = torch.cat([b["logits"] for b in batches])
    out = {"accuracy": (preds == target).double().mean().item()}
    for k in ks:
        top = logits.topk(k, 1).indices
        out["top%d_accuracy" % k] = (top == target[:, None]).any(1).double().mean().item()
    confusion = torch.bincount(target * c + preds, minlength=c * c).reshape(c, c).double()
    tp, predicted, truth = confusion.diagonal(), confusion.sum(0), confusion.sum(1)
    per_class = class_scores(tp, predicted, truth)
    micro = class_scores(tp.sum(), predicted.sum(), truth.sum())
    for name, v in per_class.items():
        out[name + "_macro"] = v.mean().item()
        out[name + "_weighted"] = ((v * truth).sum() / truth.sum()).item()
        out[name + "_micro"] = micro[name].item()
    out["per_class"] = {"tp": tp.tolist(), "predicted": predicted.tolist(),
                        "truth": truth.tolist()}
    return out


def batch(n, c, classes_present, never_predicted, kind, gen):
    logits = torch.randn(n, c, dtype=torch.float64, generator=gen)
    for k in never_predicted:
        logits[:, k] -= 50.0
    pick = torch.randint(0, len(classes_present), (n,), generator=gen)
    index = torch.tensor(classes_present)[pick]
    b = {"logits": logits, "index": index}
    if kind == "index":
        b["target"] = index.tolist()
        b["target_shape"] = [n]
    else:
        if kind == "onehot":
            t = torch.nn.functional.one_hot(index, c).double()
        else:  # class probabilities whose argmax is the class
            t = torch.rand(n, c, dtype=torch.float64, generator=gen) * 0.5
            t[torch.arange(n), index] += 1.0
            t = t / t.sum(1, keepdim=True)
        b["target"] = t.flatten().tolist()
        b["target_shape"] = [n, c]
    return b


def case(name, c, sizes, present, never_predicted, kinds, ks, seed):
    gen = torch.Generator().manual_seed(seed)
    batches = [batch(n, c, present, never_predicted, kinds[i % len(kinds)], gen)
               for i, n in enumerate(sizes)]
    return {
        "name": name, "num_classes": c, "ks": ks,
        "batches": [{"logits": b["logits"].flatten().tolist(), "shape": list(b["logits"].shape),
                     "target": b["target"], "target_shape": b["target_shape"]}
                    for b in batches],
        "expected": expected(batches, c, ks),
    }


def main():
    cases = [
        # Class 2 is present but never predicted, class 4 predicted but never present, class 5
        # neither: each takes the zero_division branch somewhere.
        case("absent_classes", 6, [17, 9, 23, 1], [0, 1, 2, 3], [2, 5], ["index"], [1, 2, 3, 6],
             1),
        case("onehot_and_probs", 4, [12, 7, 20], [0, 1, 2, 3], [], ["onehot", "probs"], [1, 2],
             2),
        case("many_classes", 10, [32, 32, 5, 40, 16], list(range(10)), [], ["index"],
             [1, 3, 5], 3),
        case("two_classes", 2, [8, 3], [0, 1], [], ["index", "probs"], [1, 2], 4),
    ]
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump({"cases": cases}, f, indent=None, separators=(",", ":"))
        f.write("\n")
    print("wrote", OUT, os.path.getsize(OUT), "bytes")


if __name__ == "__main__":
    main()
