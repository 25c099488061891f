#!/usr/bin/python3
"""The loss of a Hugging Face GPT-2 (issue 20) or Llama (issue 26) export computed by the project's
PyTorch reference (gpt_torch.py, llama_torch.py): the directory read by hf_dir.py (written from
the file specifications), its config.json driving the architecture, float64 computation. A
Llama's tensors are renamed to the reference's names by the Llama architecture's own structure
(q | k | v rows of one attention input projection, gate | up of the MLP's).

  hf_loss.py HF_DIR --tokens FILE --first-sequence G --sequences N

Prints the mean cross-entropy over sequences G .. G+N-1 of the token file, taken as the executor
takes them (executor/data.hpp): sequence g starts at token (g * T) % (tokens - T), T =
n_positions, targets shifted by one. FILE: raw little-endian uint16, or llm.c's format (a 256
int32 header with magic 20240520, then uint16 tokens).
"""
import argparse
import os
import struct
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt_torch  # noqa: E402
import llama_torch  # noqa: E402
from hf_dir import check_model, read_hf_dir  # noqa: E402

CONV1D = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")
TORCH_DTYPES = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}


def read_tokens(path):
    blob = open(path, "rb").read()
    if len(blob) >= 1024 and struct.unpack("<i", blob[:4])[0] == 20240520:
        blob = blob[1024:]
    return list(struct.unpack(f"<{len(blob) // 2}H", blob[: len(blob) // 2 * 2]))


def llama_params(config, tensors):
    """The reference's names from LlamaForCausalLM's: per layer, c_attn = [q; k; v] and
    c_fc = [gate; up] (rows), each (out, in) as nn.Linear stores it."""
    t = {name: v for name, v in tensors.items()}
    p = {"wte.weight": t.pop("model.embed_tokens.weight"), "ln_f.weight": t.pop("model.norm.weight")}
    if "lm_head.weight" in t:
        p["lm_head.weight"] = t.pop("lm_head.weight")
    for l in range(config["num_hidden_layers"]):
        m, h = f"model.layers.{l}.", f"h.{l}."
        p[h + "ln_1.weight"] = t.pop(m + "input_layernorm.weight")
        p[h + "ln_2.weight"] = t.pop(m + "post_attention_layernorm.weight")
        for leaf in ("weight", "bias"):
            qkv = [m + f"self_attn.{x}_proj.{leaf}" for x in "qkv"]
            if qkv[0] in t:
                p[h + "attn.c_attn." + leaf] = torch.cat([t.pop(n) for n in qkv])
            if m + "self_attn.o_proj." + leaf in t:
                p[h + "attn.c_proj." + leaf] = t.pop(m + "self_attn.o_proj." + leaf)
            if m + "mlp.gate_proj." + leaf in t:
                p[h + "mlp.c_fc." + leaf] = torch.cat([t.pop(m + "mlp.gate_proj." + leaf), t.pop(m + "mlp.up_proj." + leaf)])
            if m + "mlp.down_proj." + leaf in t:
                p[h + "mlp.c_proj." + leaf] = t.pop(m + "mlp.down_proj." + leaf)
    if t:
        sys.exit(f"hf_loss: tensors the reference does not use: {sorted(t)[:5]}")
    return p


def llama_loss(config, tensors, idx, tgt):
    scaling = config.get("rope_scaling")
    if scaling is not None:
        scaling = {"factor": scaling["factor"], "low_freq_factor": scaling["low_freq_factor"],
                   "high_freq_factor": scaling["high_freq_factor"],
                   "original_max_position": scaling["original_max_position_embeddings"]}
    p = llama_params(config, tensors)
    _, loss = llama_torch.forward(p, idx, tgt, config["num_hidden_layers"], config["num_attention_heads"],
                                  config["num_key_value_heads"], config["rope_theta"], scaling,
                                  eps=config["rms_norm_eps"])
    return loss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("hf_dir")
    ap.add_argument("--tokens", required=True)
    ap.add_argument("--first-sequence", type=int, required=True)
    ap.add_argument("--sequences", type=int, required=True)
    a = ap.parse_args()

    config, tensors, _ = read_hf_dir(a.hf_dir)
    llama = check_model(config, tensors) == "Llama"
    if not llama and config["activation_function"] != "gelu_new":
        sys.exit("hf_loss: the reference computes gelu_new (GPT-2's tanh approximation) only")
    p = {}
    for name, (dtype, shape, raw) in tensors.items():
        t = torch.frombuffer(bytearray(raw), dtype=TORCH_DTYPES[dtype]).reshape(shape).double()
        p[name] = t.t() if not llama and name.endswith(CONV1D) else t  # GPT-2's Conv1D (in, out) -> (out, in)

    T = config["max_position_embeddings"] if llama else config["n_positions"]
    tokens = read_tokens(a.tokens)
    windows = len(tokens) - T
    starts = [(g * T) % windows for g in range(a.first_sequence, a.first_sequence + a.sequences)]
    idx = torch.tensor([tokens[s:s + T] for s in starts], dtype=torch.int64)
    tgt = torch.tensor([tokens[s + 1:s + T + 1] for s in starts], dtype=torch.int64)
    with torch.no_grad():
        if llama:
            loss = llama_loss(config, p, idx, tgt)
        else:
            _, loss = gpt_torch.forward(p, idx, tgt, config["n_layer"], config["n_head"],
                                        eps=config["layer_norm_epsilon"])
    print(repr(loss.item()))


if __name__ == "__main__":
    main()
