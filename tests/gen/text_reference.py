"""Reference PyTorch implementations of GPT-2, a Llama-style decoder and BERT with Hugging Face's
module names and computations (the `transformers` package is not in Debian), and GPT-2's
byte-level BPE tokenizer. gen_text_models.py builds the test folders from them; the benchmark
(bench/peers/torch_text_peer.py) times the Llama one with its key/value cache."""
import math
import re
import sys
import unicodedata

import torch
from torch import nn
import torch.nn.functional as F


# --- GPT-2 (transformers' modeling_gpt2, eager attention) -------------------------------------

class Conv1D(nn.Module):
    def __init__(self, nf, nx):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        size_out = x.size()[:-1] + (self.weight.size(-1),)
        return torch.addmm(self.bias, x.reshape(-1, x.size(-1)), self.weight).view(size_out)


def act_fn(name):
    if name in ("gelu_new", "gelu_pytorch_tanh"):
        return lambda x: F.gelu(x, approximate="tanh")
    return {"gelu": F.gelu, "relu": F.relu, "silu": F.silu}[name]


class GPT2Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.n_head, self.d = c["n_head"], c["n_embd"] // c["n_head"]
        self.c_attn = Conv1D(3 * c["n_embd"], c["n_embd"])
        self.c_proj = Conv1D(c["n_embd"], c["n_embd"])

    def forward(self, x, past=None):
        b, t, e = x.shape
        q, k, v = self.c_attn(x).split(e, dim=2)
        sh = lambda y: y.view(b, t, self.n_head, self.d).transpose(1, 2)
        q, k, v = sh(q), sh(k), sh(v)
        if past is not None:
            k, v = torch.cat([past[0], k], 2), torch.cat([past[1], v], 2)
        s = k.shape[2]
        w = q @ k.transpose(-1, -2) / math.sqrt(self.d)
        causal = torch.ones(s, s, dtype=torch.bool).tril()[s - t:s]
        w = torch.where(causal, w, torch.tensor(torch.finfo(w.dtype).min))
        y = w.softmax(-1) @ v
        return self.c_proj(y.transpose(1, 2).reshape(b, t, e)), (k, v)


class GPT2MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        inner = c.get("n_inner") or 4 * c["n_embd"]
        self.c_fc, self.c_proj = Conv1D(inner, c["n_embd"]), Conv1D(c["n_embd"], inner)
        self.act = act_fn(c.get("activation_function", "gelu_new"))

    def forward(self, x):
        return self.c_proj(self.act(self.c_fc(x)))


class GPT2Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        eps = c.get("layer_norm_epsilon", 1e-5)
        self.ln_1, self.attn = nn.LayerNorm(c["n_embd"], eps=eps), GPT2Attention(c)
        self.ln_2, self.mlp = nn.LayerNorm(c["n_embd"], eps=eps), GPT2MLP(c)

    def forward(self, x, past=None):
        a, present = self.attn(self.ln_1(x), past)
        x = x + a
        return x + self.mlp(self.ln_2(x)), present


class GPT2Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.wte = nn.Embedding(c["vocab_size"], c["n_embd"])
        self.wpe = nn.Embedding(c["n_positions"], c["n_embd"])
        self.h = nn.ModuleList([GPT2Block(c) for _ in range(c["n_layer"])])
        self.ln_f = nn.LayerNorm(c["n_embd"], eps=c.get("layer_norm_epsilon", 1e-5))

    def forward(self, ids, past=None):
        start = 0 if past is None else past[0][0].shape[2]
        x = self.wte(ids) + self.wpe(torch.arange(start, start + ids.shape[1]))
        presents = []
        for i, block in enumerate(self.h):
            x, p = block(x, None if past is None else past[i])
            presents.append(p)
        return self.ln_f(x), presents


class GPT2LMHeadModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.transformer = GPT2Model(c)
        self.lm_head = nn.Linear(c["n_embd"], c["vocab_size"], bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # tied, as HF does

    def forward(self, ids, past=None):
        h, presents = self.transformer(ids, past)
        return self.lm_head(h), presents


# --- Llama (transformers' modeling_llama, eager attention) ------------------------------------

class LlamaRMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(n)), eps

    def forward(self, x):
        dtype = x.dtype
        x = x.to(torch.float32)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rope_tables(max_pos, dim, theta):
    inv_freq = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    freqs = torch.outer(torch.arange(max_pos).float(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


class LlamaAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.h, self.kv = c["num_attention_heads"], c.get("num_key_value_heads") or c["num_attention_heads"]
        self.d = c.get("head_dim") or c["hidden_size"] // self.h
        bias = c.get("attention_bias", False)
        e = c["hidden_size"]
        self.q_proj = nn.Linear(e, self.h * self.d, bias=bias)
        self.k_proj = nn.Linear(e, self.kv * self.d, bias=bias)
        self.v_proj = nn.Linear(e, self.kv * self.d, bias=bias)
        self.o_proj = nn.Linear(self.h * self.d, e, bias=bias)

    def forward(self, x, cos, sin, past=None):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.h, self.d).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kv, self.d).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv, self.d).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        if past is not None:
            k, v = torch.cat([past[0], k], 2), torch.cat([past[1], v], 2)
        present = (k, v)
        rep = self.h // self.kv
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)  # repeat_kv
        s = k.shape[2]
        w = q @ k.transpose(2, 3) / math.sqrt(self.d)
        causal = torch.ones(s, s, dtype=torch.bool).tril()[s - t:s]
        w = w + torch.zeros(t, s).masked_fill(~causal, torch.finfo(torch.float32).min)
        y = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype) @ v
        return self.o_proj(y.transpose(1, 2).reshape(b, t, self.h * self.d)), present


class LlamaMLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        e, i, bias = c["hidden_size"], c["intermediate_size"], c.get("mlp_bias", False)
        self.gate_proj = nn.Linear(e, i, bias=bias)
        self.up_proj = nn.Linear(e, i, bias=bias)
        self.down_proj = nn.Linear(i, e, bias=bias)
        self.act = act_fn(c.get("hidden_act", "silu"))

    def forward(self, x):
        return self.down_proj(self.act(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self_attn, self.mlp = LlamaAttention(c), LlamaMLP(c)
        self.input_layernorm = LlamaRMSNorm(c["hidden_size"], c.get("rms_norm_eps", 1e-6))
        self.post_attention_layernorm = LlamaRMSNorm(c["hidden_size"], c.get("rms_norm_eps", 1e-6))

    def forward(self, x, cos, sin, past=None):
        a, present = self.self_attn(self.input_layernorm(x), cos, sin, past)
        x = x + a
        return x + self.mlp(self.post_attention_layernorm(x)), present


class LlamaModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = nn.ModuleList([LlamaDecoderLayer(c) for _ in range(c["num_hidden_layers"])])
        self.norm = LlamaRMSNorm(c["hidden_size"], c.get("rms_norm_eps", 1e-6))
        d = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
        self.cos, self.sin = rope_tables(c.get("max_position_embeddings", 2048), d,
                                         c.get("rope_theta", 10000.0))

    def forward(self, ids, past=None):
        start = 0 if past is None else past[0][0].shape[2]
        t = ids.shape[1]
        cos, sin = self.cos[start:start + t], self.sin[start:start + t]
        x = self.embed_tokens(ids)
        presents = []
        for i, layer in enumerate(self.layers):
            x, p = layer(x, cos, sin, None if past is None else past[i])
            presents.append(p)
        return self.norm(x), presents


class LlamaForCausalLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.model = LlamaModel(c)
        self.lm_head = nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)
        if c.get("tie_word_embeddings", False):
            self.lm_head.weight = self.model.embed_tokens.weight

    def forward(self, ids, past=None):
        h, presents = self.model(ids, past)
        return self.lm_head(h), presents


# --- BERT (transformers' modeling_bert, eager attention) --------------------------------------

class BertEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c["vocab_size"], c["hidden_size"],
                                            padding_idx=c.get("pad_token_id", 0))
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"], c["hidden_size"])
        self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, ids, types):
        pos = torch.arange(ids.shape[1]).unsqueeze(0)
        return self.LayerNorm(self.word_embeddings(ids) + self.position_embeddings(pos) +
                              self.token_type_embeddings(types))


class BertSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        e = c["hidden_size"]
        self.h, self.d = c["num_attention_heads"], e // c["num_attention_heads"]
        self.query, self.key, self.value = nn.Linear(e, e), nn.Linear(e, e), nn.Linear(e, e)

    def forward(self, x, ext_mask):
        b, s, e = x.shape
        sh = lambda y: y.view(b, s, self.h, self.d).permute(0, 2, 1, 3)
        q, k, v = sh(self.query(x)), sh(self.key(x)), sh(self.value(x))
        w = q @ k.transpose(-1, -2) / math.sqrt(self.d) + ext_mask
        return (w.softmax(-1) @ v).permute(0, 2, 1, 3).reshape(b, s, e)


class BertDenseNorm(nn.Module):  # BertSelfOutput and BertOutput
    def __init__(self, n_in, c):
        super().__init__()
        self.dense = nn.Linear(n_in, c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, x, residual):
        return self.LayerNorm(self.dense(x) + residual)


class BertAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self, self.output = BertSelfAttention(c), BertDenseNorm(c["hidden_size"], c)

    def forward(self, x, m):
        return self.output(self.self(x, m), x)


class BertIntermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["intermediate_size"])
        self.act = act_fn(c.get("hidden_act", "gelu"))

    def forward(self, x):
        return self.act(self.dense(x))


class BertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention, self.intermediate = BertAttention(c), BertIntermediate(c)
        self.output = BertDenseNorm(c["intermediate_size"], c)

    def forward(self, x, m):
        a = self.attention(x, m)
        return self.output(self.intermediate(a), a)


class BertEncoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(c) for _ in range(c["num_hidden_layers"])])

    def forward(self, x, m):
        for layer in self.layer:
            x = layer(x, m)
        return x


class BertPooler(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])

    def forward(self, x):
        return torch.tanh(self.dense(x[:, 0]))


class BertModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embeddings, self.encoder, self.pooler = BertEmbeddings(c), BertEncoder(c), BertPooler(c)

    def forward(self, ids, types=None, mask=None):
        types = torch.zeros_like(ids) if types is None else types
        mask = torch.ones_like(ids) if mask is None else mask
        ext = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        h = self.encoder(self.embeddings(ids, types), ext)
        return h, self.pooler(h)


# --- GPT-2's byte-level BPE (openai/gpt-2 encoder.py) -----------------------------------------

def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def _char_class(prefix):
    """A regex class of every code point whose Unicode category starts with `prefix`."""
    ranges, start, prev = [], None, None
    for cp in range(sys.maxunicode + 1):
        if unicodedata.category(chr(cp)).startswith(prefix):
            if start is None:
                start = cp
            prev = cp
        elif start is not None:
            ranges.append((start, prev))
            start = None
    if start is not None:
        ranges.append((start, prev))
    return "".join(re.escape(chr(a)) if a == b else re.escape(chr(a)) + "-" + re.escape(chr(b))
                   for a, b in ranges)


_PAT = None


def gpt2_pattern():
    """GPT-2's split pattern with \\p{L} and \\p{N} written out (Python's re has no \\p)."""
    global _PAT
    if _PAT is None:
        L, N = _char_class("L"), _char_class("N")
        _PAT = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[%s]+| ?[%s]+| ?[^\s%s%s]+|\s+(?!\S)|\s+"""
                          % (L, N, L, N))
    return _PAT


def bpe_word(word, ranks):
    word = list(word)
    while len(word) > 1:
        pairs = {(word[i], word[i + 1]) for i in range(len(word) - 1)}
        best = min(pairs, key=lambda p: ranks.get(p, float("inf")))
        if best not in ranks:
            break
        out, i = [], 0
        while i < len(word):
            if i < len(word) - 1 and (word[i], word[i + 1]) == best:
                out.append(word[i] + word[i + 1])
                i += 2
            else:
                out.append(word[i])
                i += 1
        word = out
    return word


def gpt2_encode(text, vocab, merges, special=("<|endoftext|>",)):
    ranks = {tuple(m.split(" ")): i for i, m in enumerate(merges)}
    b2u = bytes_to_unicode()
    ids = []
    parts = re.split("(" + "|".join(map(re.escape, special)) + ")", text) if special else [text]
    for part in parts:
        if part in special:
            ids.append(vocab[part])
            continue
        for piece in gpt2_pattern().findall(part):
            spelled = "".join(b2u[b] for b in piece.encode("utf-8"))
            ids.extend(vocab[t] for t in bpe_word(spelled, ranks))
    return ids


def train_bpe(text, n_merges):
    """A tiny BPE vocabulary in GPT-2's layout: the 256 byte tokens, then one per merge."""
    b2u = bytes_to_unicode()
    words = {}
    for piece in gpt2_pattern().findall(text):
        w = tuple(b2u[b] for b in piece.encode("utf-8"))
        words[w] = words.get(w, 0) + 1
    merges = []
    for _ in range(n_merges):
        counts = {}
        for w, n in words.items():
            for p in zip(w, w[1:]):
                counts[p] = counts.get(p, 0) + n
        if not counts:
            break
        best = max(sorted(counts), key=lambda p: counts[p])
        merges.append(best[0] + " " + best[1])
        new = {}
        for w, n in words.items():
            out, i = [], 0
            while i < len(w):
                if i < len(w) - 1 and (w[i], w[i + 1]) == best:
                    out.append(w[i] + w[i + 1])
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            new[tuple(out)] = new.get(tuple(out), 0) + n
        words = new
    vocab = {}
    for ch in bytes_to_unicode().values():
        vocab[ch] = len(vocab)
    for m in merges:
        vocab.setdefault(m.replace(" ", ""), len(vocab))
    vocab["<|endoftext|>"] = len(vocab)
    return vocab, merges
