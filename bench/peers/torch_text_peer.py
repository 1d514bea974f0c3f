"""Peer rows for bench/text.cpp: the same Llama-style decoder in torch (the reference
implementation of tests/gen/text_reference.py, HF's eager computation) generating 32 tokens
greedily after a 16-token prompt at batch 1 with its key/value cache ($THREADS threads).
The _int8 row is torch's dynamic int8 quantization of the same model's nn.Linear layers
(torch.ao.quantization.quantize_dynamic: int8 weights per tensor, activations quantized on the
fly), the closest torch CPU path to ember's weight-only int8 rows; it is left out where the
build has no quantized engine. torch has no int4 CPU path to compare with.
Run with /usr/bin/python3; writes torch_cpu.json to $OUT or /tmp."""
import os, sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from peer_common import bench, write  # noqa: E402  (sets the environment before torch loads)

sys.path.insert(0, os.path.join(here, "..", "..", "tests", "gen"))
import torch  # noqa: E402
import text_reference as R  # noqa: E402

CONFIG = {"vocab_size": 32000, "hidden_size": 512, "intermediate_size": 1408,
          "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 4,
          "max_position_embeddings": 256, "rms_norm_eps": 1e-5, "rope_theta": 10000.0}

model = R.LlamaForCausalLM(CONFIG).eval()
prompt = torch.tensor([[1 + 37 * i for i in range(16)]])


def decoder(m):
    def decode():
        with torch.no_grad():
            logits, past = m(prompt)
            tokens = []
            for i in range(32):  # as ember's generate: the last token needs no forward
                t = logits[0, -1].argmax().view(1, 1)
                tokens.append(int(t))
                if i < 31:
                    logits, past = m(t, past)
    return decode

bench("llama_decode_d512_L4_32tok", decoder(model), 2, 7)
engines = torch.backends.quantized.supported_engines
engine = next((e for e in ("onednn", "fbgemm", "qnnpack") if e in engines), None)
if engine:
    torch.backends.quantized.engine = engine
    int8 = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
    bench("llama_decode_d512_L4_32tok_int8", decoder(int8), 2, 7)
write()
