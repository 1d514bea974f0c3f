"""Tiny Hugging Face-style model folders for ember's text models, with torch's outputs.
Run with /usr/bin/python3 (Debian's python3-torch 1.13, python3-sentencepiece); writes
tests/data/text_models/:

  gpt2/   config.json, model.safetensors (HF's layout: no lm_head, it is tied), vocab.json,
          merges.txt (a BPE trained here on TEXT), reference.safetensors, tokenizer.json
  llama/  config.json, two shards + model.safetensors.index.json, reference.safetensors
  bert/   config.json, pytorch_model.bin (BertForMaskedLM-style keys: "bert." prefix, a head
          that BertModel skips, the position_ids buffer), reference.safetensors
  sp/     tokenizer.model (SentencePiece, trained here on TEXT) and reference.json

reference.safetensors holds the inputs (ids [2, 12]), torch's logits or hidden states, and the
32 greedy tokens after a 5-token prompt (recomputed in full each step), with the smallest gap
between the best two logits along the way (so a 1e-4 difference cannot flip a choice).
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_tool  # noqa: E402
import text_reference as R  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "text_models")

TEXT = """The quick brown fox jumps over the lazy dog. It's 2024 and we've got 3.14 reasons;
they'll say I'm "fine" -- don't they'd? Numbers: 1234567 and 42nd, x^2 + y_1 = z!
Tabs\tand  double  spaces,   trailing spaces   
café naïve façade — 東京タワー and Ελληνικά, emoji 🙂👍 <|endoftext|> end of text.
""" * 1

TRAIN = (TEXT + "the the the quick quick brown fox fox and and we the lazy dog's dogs "
         "jumping jumps jumped over overs there their they them 2024 2025 ") * 3


def init_(model, seed, std=0.15):
    """Seeded weights large enough that the logits spread out (HF's 0.02 makes them ~flat)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "LayerNorm" in name or "ln_" in name or "norm" in name:
                p.copy_((1.0 if name.endswith("weight") else 0.0) +
                        0.1 * torch.randn(p.shape, generator=g))
            elif "embed" in name or "wte" in name or "wpe" in name:
                p.copy_(0.5 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(std * torch.randn(p.shape, generator=g))


def greedy(model, prompt, steps):
    """Greedy tokens, recomputing the whole sequence each step; and the smallest top-2 gap."""
    seq, out, gap = list(prompt), [], float("inf")
    for _ in range(steps):
        logits = model(torch.tensor([seq]))[0][0, -1]
        top = logits.topk(2).values
        gap = min(gap, float(top[0] - top[1]))
        t = int(logits.argmax())
        out.append(t)
        seq.append(t)
    return out, gap


def cached_matches(model, prompt, steps, full):
    """The same greedy run through the reference's own cache gives the same tokens."""
    logits, past = model(torch.tensor([prompt]))
    out = []
    for _ in range(steps):
        t = int(logits[0, -1].argmax())
        out.append(t)
        logits, past = model(torch.tensor([[t]]), past)
    assert out == full, (out, full)


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1, ensure_ascii=False)
        f.write("\n")


def decoder_reference(model, vocab, seed):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab, (2, 12), generator=g)
    prompt = torch.randint(0, vocab, (5,), generator=g).tolist()
    with torch.no_grad():
        logits = model(ids)[0]
        tokens, gap = greedy(model, prompt, 32)
        cached_matches(model, prompt, 32, tokens)
    print(f"  greedy: smallest top-2 gap {gap:.4f}")
    assert gap > 1e-3, "pick another seed: a greedy step is nearly a tie"
    return [("input_ids", ids), ("logits", logits), ("prompt", torch.tensor(prompt)),
            ("greedy", torch.tensor(tokens))], gap


def gen_gpt2():
    d = os.path.join(OUT, "gpt2")
    os.makedirs(d, exist_ok=True)
    vocab, merges = R.train_bpe(TRAIN, 40)
    with open(os.path.join(d, "vocab.json"), "w") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(d, "merges.txt"), "w") as f:
        f.write("#version: 0.2\n" + "\n".join(merges) + "\n")
    pieces = R.gpt2_pattern().findall(TEXT.replace("<|endoftext|>", ""))
    write_json(os.path.join(d, "tokenizer.json"),
               {"text": TEXT, "ids": R.gpt2_encode(TEXT, vocab, merges),
                "pieces_text": TEXT.replace("<|endoftext|>", ""), "pieces": pieces})
    c = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": len(vocab),
         "n_positions": 64, "n_embd": 64, "n_layer": 2, "n_head": 4, "n_inner": None,
         "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5,
         "bos_token_id": len(vocab) - 1, "eos_token_id": len(vocab) - 1}
    write_json(os.path.join(d, "config.json"), c)
    torch.manual_seed(0)
    m = R.GPT2LMHeadModel(c).eval()
    init_(m, 1)
    sd = [(k, v) for k, v in m.state_dict().items() if k != "lm_head.weight"]
    safetensors_tool.save(os.path.join(d, "model.safetensors"), sd, {"format": "pt"})
    ref, gap = decoder_reference(m, c["vocab_size"], 2)
    safetensors_tool.save(os.path.join(d, "reference.safetensors"), ref,
                          {"greedy_gap": f"{gap:.6f}"})


def gen_llama():
    d = os.path.join(OUT, "llama")
    os.makedirs(d, exist_ok=True)
    c = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 256,
         "hidden_size": 64, "intermediate_size": 160, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64,
         "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": False,
         "hidden_act": "silu", "rope_scaling": None, "bos_token_id": 1, "eos_token_id": 2}
    write_json(os.path.join(d, "config.json"), c)
    torch.manual_seed(0)
    m = R.LlamaForCausalLM(c).eval()
    init_(m, 3)
    items = list(m.state_dict().items())
    half = len(items) // 2
    shards = {"model-00001-of-00002.safetensors": items[:half],
              "model-00002-of-00002.safetensors": items[half:]}
    weight_map, total = {}, 0
    for name, part in shards.items():
        safetensors_tool.save(os.path.join(d, name), part, {"format": "pt"})
        for k, v in part:
            weight_map[k] = name
            total += v.numel() * v.element_size()
    write_json(os.path.join(d, "model.safetensors.index.json"),
               {"metadata": {"total_size": total}, "weight_map": weight_map})
    ref, gap = decoder_reference(m, c["vocab_size"], 4)
    safetensors_tool.save(os.path.join(d, "reference.safetensors"), ref,
                          {"greedy_gap": f"{gap:.6f}"})


def gen_bert():
    d = os.path.join(OUT, "bert")
    os.makedirs(d, exist_ok=True)
    c = {"model_type": "bert", "architectures": ["BertForMaskedLM"], "vocab_size": 200,
         "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
         "intermediate_size": 128, "hidden_act": "gelu", "max_position_embeddings": 32,
         "type_vocab_size": 2, "layer_norm_eps": 1e-12, "pad_token_id": 0}
    write_json(os.path.join(d, "config.json"), c)
    torch.manual_seed(0)
    m = R.BertModel(c).eval()
    init_(m, 5)
    sd = {"bert." + k: v for k, v in m.state_dict().items()}
    sd["bert.embeddings.position_ids"] = torch.arange(32).unsqueeze(0)
    sd["cls.predictions.bias"] = torch.zeros(200)
    torch.save(sd, os.path.join(d, "pytorch_model.bin"))
    g = torch.Generator().manual_seed(6)
    ids = torch.randint(1, 200, (2, 12), generator=g)
    types = torch.cat([torch.zeros(2, 6, dtype=torch.int64), torch.ones(2, 6, dtype=torch.int64)], 1)
    mask = torch.ones(2, 12, dtype=torch.int64)
    mask[1, 9:] = 0
    ids[1, 9:] = 0
    with torch.no_grad():
        h, pooled = m(ids, types, mask)
    safetensors_tool.save(os.path.join(d, "reference.safetensors"),
                          [("input_ids", ids), ("token_type_ids", types), ("attention_mask", mask),
                           ("last_hidden_state", h), ("pooler_output", pooled)])


def gen_sentencepiece():
    try:
        import sentencepiece as spm
    except ImportError:
        print("  python3-sentencepiece is not installed: skipping sp/")
        return
    d = os.path.join(OUT, "sp")
    os.makedirs(d, exist_ok=True)
    train = os.path.join(d, "train.txt")
    with open(train, "w") as f:
        f.write("\n".join(l for l in TRAIN.split("\n") if l.isascii()))
    spm.SentencePieceTrainer.train(input=train, model_prefix=os.path.join(d, "tokenizer"),
                                   vocab_size=100, model_type="bpe", character_coverage=1.0,
                                   normalization_rule_name="identity", minloglevel=2)
    os.remove(train)
    os.remove(os.path.join(d, "tokenizer.vocab"))
    sp = spm.SentencePieceProcessor(model_file=os.path.join(d, "tokenizer.model"))
    text = "The quick brown fox jumps over the lazy dog's 2024 dogs."
    ids = sp.encode(text)
    write_json(os.path.join(d, "reference.json"),
               {"text": text, "ids": ids, "decoded": sp.decode(ids), "vocab_size": sp.get_piece_size()})


def main():
    for f in (gen_gpt2, gen_llama, gen_bert, gen_sentencepiece):
        print(f.__name__)
        f()


if __name__ == "__main__":
    main()
