#!/usr/bin/python3
"""The loss of a Hugging Face GPT-2 export (issue 20) computed by the project's PyTorch reference:
the directory read by hf_dir.py (written from the file specifications), its config.json driving
the architecture, float64 computation.

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
from gpt_torch import forward  # noqa: E402
from hf_dir import check_gpt2, read_hf_dir  # noqa: E402

CONV1D = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")
TORCH_DTYPES = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}


def read_tokens(path):
    blob = open(path, "rb").read()
    if len(blob) >= 1024 and struct.unpack("<i", blob[:4])[0] == 20240520:
        blob = blob[1024:]
    return list(struct.unpack(f"<{len(blob) // 2}H", blob[: len(blob) // 2 * 2]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("hf_dir")
    ap.add_argument("--tokens", required=True)
    ap.add_argument("--first-sequence", type=int, required=True)
    ap.add_argument("--sequences", type=int, required=True)
    a = ap.parse_args()

    config, tensors, _ = read_hf_dir(a.hf_dir)
    check_gpt2(config, tensors)
    if config["activation_function"] != "gelu_new":
        sys.exit("hf_loss: the reference computes gelu_new (GPT-2's tanh approximation) only")
    p = {}
    for name, (dtype, shape, raw) in tensors.items():
        t = torch.frombuffer(bytearray(raw), dtype=TORCH_DTYPES[dtype]).reshape(shape).double()
        p[name] = t.t() if name.endswith(CONV1D) else t  # GPT-2's Conv1D (in, out) -> (out, in)

    T = config["n_positions"]
    tokens = read_tokens(a.tokens)
    windows = len(tokens) - T
    starts = [(g * T) % windows for g in range(a.first_sequence, a.first_sequence + a.sequences)]
    idx = torch.tensor([tokens[s:s + T] for s in starts], dtype=torch.int64)
    tgt = torch.tensor([tokens[s + 1:s + T + 1] for s in starts], dtype=torch.int64)
    with torch.no_grad():
        _, loss = forward(p, idx, tgt, config["n_layer"], config["n_head"], eps=config["layer_norm_epsilon"])
    print(repr(loss.item()))


if __name__ == "__main__":
    main()
