#!/usr/bin/python3
"""Independent reference for the executor's mixture of experts (issue 27): moe_torch.py in float64.

For each model (the moe-tiny preset: softmax top-2 of 8 experts and one shared expert in every
layer; moe_sigmoid_model.json: sigmoid top-3 routing, two shared experts, a leading dense layer)
writes into golden_<name>/ (committed):
  ckpt/step_000000/model_tp0_pp0.safetensors  random weights in the executor's checkpoint format
                                              (Hugging Face Llama names, DeepSeek-V3's for the MoE
                                              tensors: model.layers.N.mlp.gate.weight, mlp.experts.
                                              E.{gate,up,down}_proj.weight, mlp.shared_experts.
                                              {gate,up,down}_proj.weight) + COMPLETE
  tokens.bin                                  raw uint16 tokens
  golden.safetensors                          loss (cross-entropy + aux), logits and the gradient of
                                              every parameter under the executor's internal names
                                              for the first step; metadata "losses": the objective
                                              of five steps of the executor's training (global-norm
                                              clip 1.0, AdamW lr 3e-4, betas 0.9/0.95, eps 1e-8,
                                              weight decay 0.1 on matrices: kernels/math.hpp)

tests/reference/test_reference.cpp resumes the single-process executor from the checkpoint, runs
five steps and compares. Rerun with scripts/reference.
"""
import json
import os
import sys

import torch

from gpt_reference import write_safetensors
from moe_torch import forward, is_moe_layer

HERE = os.path.dirname(os.path.abspath(__file__))
FORMAT = "parallax checkpoint 1 (HF Llama names and (out, in) layout; model.embed_tokens and lm_head padded)"
B = 4  # the test's global batch: 4 micro-batches of 1 sequence
STEPS = 5
# AdamW and clipping as the executor's defaults (kernels/math.hpp AdamW, run.hpp grad_clip).
LR, BETA1, BETA2, EPS, WD, CLIP = 3e-4, 0.9, 0.95, 1e-8, 0.1, 1.0


def make_weights(gen, model):
    L, C, NH, KVH, FF, V = (model[k] for k in ("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab"))
    moe = model["moe"]
    HD = C // NH

    def normal(*shape, std=0.02):
        return torch.randn(*shape, generator=gen) * std

    w = {"wte.weight": normal(V, C, std=0.5)}
    for l in range(L):
        h = f"h.{l}."
        w[h + "ln_1.weight"] = 1 + normal(C, std=0.1)
        w[h + "attn.c_attn.weight"] = normal((NH + 2 * KVH) * HD, C, std=0.2)
        w[h + "attn.c_proj.weight"] = normal(C, NH * HD, std=0.05)
        w[h + "ln_2.weight"] = 1 + normal(C, std=0.1)
        if not is_moe_layer(moe, l):
            w[h + "mlp.c_fc.weight"] = normal(2 * FF, C, std=0.1)
            w[h + "mlp.c_proj.weight"] = normal(C, FF, std=0.05)
            continue
        # Router logits of a few units: decisive routing, far from ties (the margin is checked).
        w[h + "mlp.router.weight"] = normal(moe["num_experts"], C, std=0.3)
        Fe = moe["expert_ffn_hidden"]
        for e in range(moe["num_experts"]):
            w[h + f"mlp.experts.{e}.c_fc.weight"] = normal(2 * Fe, C, std=0.1)
            w[h + f"mlp.experts.{e}.c_proj.weight"] = normal(C, Fe, std=0.05)
        if moe.get("shared_experts", 0) > 0:
            Fs = moe["shared_experts"] * moe["shared_expert_ffn_hidden"]
            w[h + "mlp.shared_experts.c_fc.weight"] = normal(2 * Fs, C, std=0.1)
            w[h + "mlp.shared_experts.c_proj.weight"] = normal(C, Fs, std=0.05)
    w["ln_f.weight"] = 1 + normal(C, std=0.1)
    w["lm_head.weight"] = normal(V, C, std=0.1)
    return w


def hf_names(weights, model):
    """The checkpoint's tensors: Hugging Face Llama names (DeepSeek-V3's inside MoE layers), fused
    tensors split into their parts."""
    L, C, NH, KVH = (model[k] for k in ("layers", "hidden", "heads", "kv_heads"))
    HD = C // NH
    out = [("model.embed_tokens.weight", weights["wte.weight"])]

    def mlp(ours, theirs):
        gate, up = weights[ours + "c_fc.weight"].chunk(2, dim=0)
        return [(theirs + "gate_proj.weight", gate), (theirs + "up_proj.weight", up),
                (theirs + "down_proj.weight", weights[ours + "c_proj.weight"])]

    for l in range(L):
        h, m = f"h.{l}.", f"model.layers.{l}."
        q, k, v = weights[h + "attn.c_attn.weight"].split([NH * HD, KVH * HD, KVH * HD])
        out += [(m + "input_layernorm.weight", weights[h + "ln_1.weight"]),
                (m + "self_attn.q_proj.weight", q), (m + "self_attn.k_proj.weight", k),
                (m + "self_attn.v_proj.weight", v),
                (m + "self_attn.o_proj.weight", weights[h + "attn.c_proj.weight"]),
                (m + "post_attention_layernorm.weight", weights[h + "ln_2.weight"])]
        if h + "mlp.router.weight" not in weights:
            out += mlp(h + "mlp.", m + "mlp.")
            continue
        out.append((m + "mlp.gate.weight", weights[h + "mlp.router.weight"]))
        for e in range(model["moe"]["num_experts"]):
            out += mlp(h + f"mlp.experts.{e}.", m + f"mlp.experts.{e}.")
        if h + "mlp.shared_experts.c_fc.weight" in weights:
            out += mlp(h + "mlp.shared_experts.", m + "mlp.shared_experts.")
    out += [("model.norm.weight", weights["ln_f.weight"]), ("lm_head.weight", weights["lm_head.weight"])]
    return out


def batch(tokens, step, T):
    """The executor's sequences of `step` (data.cpp: sequence g starts at (g T) mod (n - T))."""
    windows = tokens.numel() - T
    starts = [((step * B + g) * T) % windows for g in range(B)]
    return (torch.stack([tokens[s:s + T] for s in starts]), torch.stack([tokens[s + 1:s + T + 1] for s in starts]))


def train(p, tokens, model):
    """Five steps as the executor trains: (first step's loss, logits and gradients, every step's
    loss, the smallest top-k margin met)."""
    m = {k: torch.zeros_like(v) for k, v in p.items()}
    v2 = {k: torch.zeros_like(v) for k, v in p.items()}
    losses, first, margin = [], None, float("inf")
    for step in range(STEPS):
        idx, tgt = batch(tokens, step, model["seq_len"])
        for t in p.values():
            t.grad = None
        logits, loss, gap = forward(p, idx, tgt, model)
        loss.backward()
        margin = min(margin, gap)
        losses.append(loss.item())
        if first is None:
            first = (loss.detach().clone(), logits.detach().clone(), {k: t.grad.clone() for k, t in p.items()})
        with torch.no_grad():
            norm = torch.sqrt(sum((t.grad ** 2).sum() for t in p.values())).item()
            scale = CLIP / (norm + 1e-6) if norm > CLIP else 1.0
            c1, c2 = 1 - BETA1 ** (step + 1), 1 - BETA2 ** (step + 1)
            for k, t in p.items():
                g = t.grad * scale
                m[k].mul_(BETA1).add_((1 - BETA1) * g)
                v2[k].mul_(BETA2).add_((1 - BETA2) * g * g)
                wd = WD if t.dim() == 2 else 0.0
                t -= LR * ((m[k] / c1) / (torch.sqrt(v2[k] / c2) + EPS) + wd * t)
    return first, losses, margin


def write_golden(name, model_path, seed):
    with open(model_path) as f:
        model = json.load(f)
    out = os.path.join(HERE, "golden_" + name)
    gen = torch.Generator().manual_seed(seed)
    weights = make_weights(gen, model)
    n_tokens = STEPS * B * model["seq_len"] + 1 + 40
    tokens = torch.randint(0, model["vocab"], (n_tokens,), generator=gen, dtype=torch.int64)
    p = {k: v.double().requires_grad_(True) for k, v in weights.items()}
    (loss, logits, grads), losses, margin = train(p, tokens, model)
    # The routing must not hinge on rounding: float32 against float64 moves logits by ~1e-6.
    if margin < 1e-4:
        sys.exit(f"{name}: a top-k margin of {margin:g} could route otherwise in float32; change the seed")

    ckpt = os.path.join(out, "ckpt", "step_000000")
    os.makedirs(ckpt, exist_ok=True)
    write_safetensors(os.path.join(ckpt, "model_tp0_pp0.safetensors"), hf_names(weights, model),
                      {"format": "pt", "parallax_format": FORMAT, "step": "0",
                       "source": "tests/reference/moe_reference.py", "model": json.dumps(model)})
    with open(os.path.join(ckpt, "COMPLETE"), "w") as f:
        f.write("0\n")
    with open(os.path.join(out, "tokens.bin"), "wb") as f:
        f.write(tokens.to(torch.int32).numpy().astype("<u2").tobytes())
    golden = [("loss", loss.view(1)), ("logits", logits)]
    golden += [("grad." + k, g) for k, g in grads.items()]
    write_safetensors(os.path.join(out, "golden.safetensors"), golden,
                      {"loss": repr(loss.item()), "losses": json.dumps(losses), "min_topk_margin": repr(margin),
                       "torch": torch.__version__, "precision": "float64 computation, stored as float32"})
    print(f"{name}: losses {' '.join(f'{x:.9f}' for x in losses)}; smallest top-k margin {margin:.3g}; wrote {out}",
          file=sys.stderr)


def main():
    write_golden("moe", os.path.join(HERE, "..", "..", "presets", "models", "moe-tiny.json"), 20270127)
    write_golden("moe_sigmoid", os.path.join(HERE, "moe_sigmoid_model.json"), 20270128)


if __name__ == "__main__":
    main()
