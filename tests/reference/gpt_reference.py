#!/usr/bin/python3
"""Independent reference for the executor (issue 6): the same GPT written in PyTorch, in float64.

Writes into golden/ (committed):
  ckpt/step_000000/model_tp0_pp0.safetensors  random weights in the executor's checkpoint format
                                              (HF GPT-2 names and Conv1D layout, shard metadata,
                                              FNV-1a 64 checksum) plus COMPLETE
  tokens.bin                                  raw uint16 tokens
  golden.safetensors                          loss, logits and the gradient of every parameter
                                              (executor layout, (out, in)) for the executor's first
                                              micro-batches of those tokens

The CI test (tests/reference/test_reference.cpp) resumes the single-process executor from the
checkpoint, runs one step on tokens.bin and compares loss and every gradient tensor by name.
Rerun with scripts/reference (needs Debian's python3-torch).
"""
import json
import os
import struct
import sys

import torch

from gpt_torch import forward

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "golden")

with open(os.path.join(HERE, "micro_model.json")) as f:
    MODEL = json.load(f)
L, C, NH, FF, T, V = (MODEL[k] for k in ("layers", "hidden", "heads", "ffn_hidden", "seq_len", "vocab"))
B = 4  # the test's global batch (4 micro-batches of 1 sequence)
N_TOKENS = 200


def fnv1a_64(data: bytes) -> int:
    """FNV-1a, 64 bits, as specified (offset basis 14695981039346656037, prime 2^40 + 2^8 + 0xb3)."""
    h = 14695981039346656037
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def write_safetensors(path, tensors, metadata):
    """tensors: list of (name, float32 tensor); every tensor is a whole (replicated) shard."""
    header, blobs, offset = {}, [], 0
    meta = dict(metadata)
    for name, t in tensors:
        b = t.detach().to(torch.float32).contiguous().numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(b)]}
        meta["shard:" + name] = json.dumps({"global_shape": list(t.shape), "dim": -1, "segments": []})
        blobs.append(b)
        offset += len(b)
    data = b"".join(blobs)
    meta["checksum_algorithm"] = "fnv1a-64"
    meta["checksum"] = format(fnv1a_64(data), "016x")
    header["__metadata__"] = meta
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)
    os.replace(tmp, path)


def make_weights(gen):
    def normal(*shape, std=0.02):
        return torch.randn(*shape, generator=gen) * std

    w = {"wte.weight": normal(V, C), "wpe.weight": normal(T, C, std=0.01)}
    for l in range(L):
        h = f"h.{l}."
        # Non-trivial norms and biases so that every gradient path is exercised.
        w[h + "ln_1.weight"] = 1 + normal(C, std=0.1)
        w[h + "ln_1.bias"] = normal(C, std=0.1)
        w[h + "attn.c_attn.weight"] = normal(3 * C, C)
        w[h + "attn.c_attn.bias"] = normal(3 * C, std=0.1)
        w[h + "attn.c_proj.weight"] = normal(C, C)
        w[h + "attn.c_proj.bias"] = normal(C, std=0.1)
        w[h + "ln_2.weight"] = 1 + normal(C, std=0.1)
        w[h + "ln_2.bias"] = normal(C, std=0.1)
        w[h + "mlp.c_fc.weight"] = normal(FF, C)
        w[h + "mlp.c_fc.bias"] = normal(FF, std=0.1)
        w[h + "mlp.c_proj.weight"] = normal(C, FF)
        w[h + "mlp.c_proj.bias"] = normal(C, std=0.1)
    w["ln_f.weight"] = 1 + normal(C, std=0.1)
    w["ln_f.bias"] = normal(C, std=0.1)
    return w


def main():
    gen = torch.Generator().manual_seed(20240520)
    weights = make_weights(gen)
    tokens = torch.randint(0, V, (N_TOKENS,), generator=gen, dtype=torch.int64)
    # The executor's sequence g of step 0 starts at token g*T (data.hpp).
    idx = torch.stack([tokens[g * T: g * T + T] for g in range(B)])
    tgt = torch.stack([tokens[g * T + 1: g * T + T + 1] for g in range(B)])

    p = {k: v.double().requires_grad_(True) for k, v in weights.items()}
    logits, loss = forward(p, idx, tgt, L, NH)
    loss.backward()

    ckpt = os.path.join(OUT, "ckpt", "step_000000")
    os.makedirs(ckpt, exist_ok=True)
    # Checkpoints use Hugging Face's Conv1D layout (in, out) for these weights.
    conv1d = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")
    hf = [(k, v.t() if k.endswith(conv1d) else v) for k, v in weights.items()]
    write_safetensors(os.path.join(ckpt, "model_tp0_pp0.safetensors"), hf,
                      {"format": "pt",
                       "parallax_format": "parallax checkpoint 1 (HF GPT-2 names and Conv1D (in, out) layout; wte padded)",
                       "step": "0", "source": "tests/reference/gpt_reference.py",
                       "model": json.dumps(MODEL)})  # the model it belongs to: parallax checks it on resume
    with open(os.path.join(ckpt, "COMPLETE"), "w") as f:
        f.write("0\n")
    with open(os.path.join(OUT, "tokens.bin"), "wb") as f:
        f.write(tokens.to(torch.int32).numpy().astype("<u2").tobytes())
    golden = [("loss", loss.detach().view(1)), ("logits", logits.detach())]
    golden += [("grad." + k, v.grad) for k, v in p.items()]
    write_safetensors(os.path.join(OUT, "golden.safetensors"), golden,
                      {"loss": repr(loss.item()), "torch": torch.__version__,
                       "precision": "float64 computation, stored as float32"})
    print(f"loss {loss.item():.9f}; wrote {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
