#!/usr/bin/python3
"""Independent reference for the executor's Llama (issue 26): llama_torch.py in float64.

Writes into golden_llama/ (committed):
  ckpt/step_000000/model_tp0_pp0.safetensors  random weights of llama_model.json in the executor's
                                              checkpoint format for Llama-family models (Hugging
                                              Face Llama names, (out, in), q/k/v and gate/up
                                              stored apart, shard metadata, FNV-1a 64) + COMPLETE
  tokens.bin                                  raw uint16 tokens
  golden.safetensors                          loss, logits and the gradient of every parameter
                                              under the executor's internal names ("grad.h.0.
                                              attn.c_attn.weight", (out, in), q | k | v rows) for
                                              the executor's first micro-batches of those tokens

tests/reference/test_reference.cpp resumes the single-process executor from the checkpoint, runs
one step and compares loss, logits and every gradient by name. Rerun with scripts/reference.
"""
import json
import os
import sys

import torch

from gpt_reference import write_safetensors
from llama_torch import forward

HERE = os.path.dirname(os.path.abspath(__file__))
FORMAT = "parallax checkpoint 1 (HF Llama names and (out, in) layout; model.embed_tokens and lm_head padded)"

# Arguments: the model file and the output directory under tests/reference (llama_model.json and
# golden_llama by default; scripts/reference also writes golden_llama_head_dim from
# llama_head_dim_model.json, whose heads are not hidden / heads wide).
MODEL_FILE = sys.argv[1] if len(sys.argv) > 1 else "llama_model.json"
OUT = os.path.join(HERE, sys.argv[2] if len(sys.argv) > 2 else "golden_llama")
with open(os.path.join(HERE, MODEL_FILE)) as f:
    MODEL = json.load(f)
L, C, NH, KVH, FF, T, V = (MODEL[k] for k in ("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "seq_len", "vocab"))
HD = MODEL.get("head_dim", C // NH)  # Hugging Face head_dim, Megatron-LM --kv-channels
B = 4  # the test's global batch (4 micro-batches of 1 sequence)
N_TOKENS = 200


def make_weights(gen):
    def normal(*shape, std=0.02):
        return torch.randn(*shape, generator=gen) * std

    # Larger than an initialisation's 0.02 so that attention is far from uniform and RoPE's
    # rotation (and its scaling) changes the loss measurably.
    w = {"wte.weight": normal(V, C, std=0.5)}
    for l in range(L):
        h = f"h.{l}."
        w[h + "ln_1.weight"] = 1 + normal(C, std=0.1)
        w[h + "attn.c_attn.weight"] = normal((NH + 2 * KVH) * HD, C, std=0.2)
        w[h + "attn.c_proj.weight"] = normal(C, NH * HD, std=0.05)
        w[h + "ln_2.weight"] = 1 + normal(C, std=0.1)
        w[h + "mlp.c_fc.weight"] = normal(2 * FF, C, std=0.1)
        w[h + "mlp.c_proj.weight"] = normal(C, FF, std=0.05)
    w["ln_f.weight"] = 1 + normal(C, std=0.1)
    w["lm_head.weight"] = normal(V, C, std=0.1)
    return w


def hf_llama(weights):
    """The checkpoint's tensors: Hugging Face Llama names, fused tensors split."""
    out = [("model.embed_tokens.weight", weights["wte.weight"])]
    for l in range(L):
        h, m = f"h.{l}.", f"model.layers.{l}."
        q, k, v = weights[h + "attn.c_attn.weight"].split([NH * HD, KVH * HD, KVH * HD])
        gate, up = weights[h + "mlp.c_fc.weight"].split([FF, FF])
        out += [(m + "input_layernorm.weight", weights[h + "ln_1.weight"]),
                (m + "self_attn.q_proj.weight", q), (m + "self_attn.k_proj.weight", k),
                (m + "self_attn.v_proj.weight", v),
                (m + "self_attn.o_proj.weight", weights[h + "attn.c_proj.weight"]),
                (m + "post_attention_layernorm.weight", weights[h + "ln_2.weight"]),
                (m + "mlp.gate_proj.weight", gate), (m + "mlp.up_proj.weight", up),
                (m + "mlp.down_proj.weight", weights[h + "mlp.c_proj.weight"])]
    out += [("model.norm.weight", weights["ln_f.weight"]), ("lm_head.weight", weights["lm_head.weight"])]
    return out


def main():
    gen = torch.Generator().manual_seed(20261127)
    weights = make_weights(gen)
    tokens = torch.randint(0, V, (N_TOKENS,), generator=gen, dtype=torch.int64)
    # The executor's sequence g of step 0 starts at token g*T (data.hpp).
    idx = torch.stack([tokens[g * T: g * T + T] for g in range(B)])
    tgt = torch.stack([tokens[g * T + 1: g * T + T + 1] for g in range(B)])

    p = {k: v.double().requires_grad_(True) for k, v in weights.items()}
    logits, loss = forward(p, idx, tgt, L, NH, KVH, MODEL["rope_base"], MODEL.get("rope_scaling"))
    loss.backward()
    # The same weights without RoPE's scaling and at the default base: the golden loss must
    # depend on both, or the test could not tell them apart.
    with torch.no_grad():
        _, plain = forward(p, idx, tgt, L, NH, KVH, 10000.0, None)
        _, unscaled = forward(p, idx, tgt, L, NH, KVH, MODEL["rope_base"], None)

    ckpt = os.path.join(OUT, "ckpt", "step_000000")
    os.makedirs(ckpt, exist_ok=True)
    write_safetensors(os.path.join(ckpt, "model_tp0_pp0.safetensors"), hf_llama(weights),
                      {"format": "pt", "parallax_format": FORMAT, "step": "0",
                       "source": "tests/reference/llama_reference.py",
                       "model": json.dumps(MODEL)})  # the model it belongs to: parallax checks it on resume
    with open(os.path.join(ckpt, "COMPLETE"), "w") as f:
        f.write("0\n")
    with open(os.path.join(OUT, "tokens.bin"), "wb") as f:
        f.write(tokens.to(torch.int32).numpy().astype("<u2").tobytes())
    golden = [("loss", loss.detach().view(1)), ("logits", logits.detach())]
    golden += [("grad." + k, v.grad) for k, v in p.items()]
    write_safetensors(os.path.join(OUT, "golden.safetensors"), golden,
                      {"loss": repr(loss.item()), "loss_rope_base_10000_unscaled": repr(plain.item()),
                       "loss_unscaled": repr(unscaled.item()), "torch": torch.__version__,
                       "precision": "float64 computation, stored as float32"})
    print(f"loss {loss.item():.9f} (base 10000 unscaled {plain.item():.9f}, unscaled {unscaled.item():.9f}); "
          f"wrote {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
