"""The Llama forward of the project's PyTorch reference (issue 26), shared by llama_reference.py
(the executor's golden file) and hf_loss.py (the loss of a Hugging Face Llama export): written
from the architecture (Touvron et al. 2023, "LLaMA"; Meta's llama-models reference code for
Llama 3.1's scaled RoPE), not from transformers. Weights (out, in) under the executor's internal
names, y = x @ W.T (+ b with linear biases):

  wte.weight (V, C); per layer h.N.: ln_1.weight (C) RMSNorm; attn.c_attn.weight
  ((NH + 2 KVH) hd, C) rows q | k | v, heads contiguous in each; attn.c_proj.weight (C, NH hd);
  ln_2.weight (C); mlp.c_fc.weight (2F, C) rows gate | up; mlp.c_proj.weight (C, F);
  ln_f.weight (C); lm_head.weight (V, C) when untied (else wte).

RMSNorm: x / sqrt(mean(x^2) + eps) * w. RoPE rotate-half: dimension i of a head pairs with
i + hd/2 and turns by pos * inv_freq[i], inv_freq[i] = base^(-2i/hd) (scaled as Llama 3.1 when
asked). Grouped-query attention: query head h reads kv head h // (NH / KVH). SwiGLU MLP:
down(silu(gate x) * up x)."""
import math

import torch
import torch.nn.functional as F


def rope_inv_freq(head_dim, base, scaling=None):
    """base^(-2i/d), i < d/2; with scaling {factor, low_freq_factor, high_freq_factor,
    original_max_position}: Llama 3.1's apply_scaling (wavelengths below old/high kept, above
    old/low divided by factor, between blended by smooth = (old/wavelen - low) / (high - low))."""
    freqs = [base ** (-(2 * i) / head_dim) for i in range(head_dim // 2)]
    if scaling:
        factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
        old = scaling["original_max_position"]
        out = []
        for f in freqs:
            wavelen = 2 * math.pi / f
            if wavelen < old / high:
                out.append(f)
            elif wavelen > old / low:
                out.append(f / factor)
            else:
                smooth = (old / wavelen - low) / (high - low)
                out.append((1 - smooth) * f / factor + smooth * f)
        freqs = out
    return torch.tensor(freqs, dtype=torch.float64)


def rope(x, inv_freq):
    """x (B, H, T, hd): rotate-half, pair (i, i + hd/2) turned by angle pos * inv_freq[i]."""
    T, hd = x.shape[-2], x.shape[-1]
    angle = torch.arange(T, dtype=torch.float64)[:, None] * inv_freq[None, :]  # (T, hd/2)
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    a, b = x[..., : hd // 2], x[..., hd // 2:]
    return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def linear(x, p, name):
    y = x @ p[name + ".weight"].T
    return y + p[name + ".bias"] if name + ".bias" in p else y


def forward(p, idx, targets, layers, heads, kv_heads, rope_base=10000.0, rope_scaling=None, eps=1e-5):
    """Logits (B, T, V) and the mean cross-entropy of `targets`."""
    B, T = idx.shape
    C = p["wte.weight"].shape[1]
    hd = p["h.0.attn.c_proj.weight"].shape[1] // heads
    inv_freq = rope_inv_freq(hd, rope_base, rope_scaling)
    group = heads // kv_heads
    x = p["wte.weight"][idx]
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for l in range(layers):
        h = f"h.{l}."
        a = rms_norm(x, p[h + "ln_1.weight"], eps)
        qkv = linear(a, p, h + "attn.c_attn")
        q, k, v = qkv.split([heads * hd, kv_heads * hd, kv_heads * hd], dim=-1)
        q = q.view(B, T, heads, hd).transpose(1, 2)
        k = k.view(B, T, kv_heads, hd).transpose(1, 2)
        v = v.view(B, T, kv_heads, hd).transpose(1, 2)
        q, k = rope(q, inv_freq), rope(k, inv_freq)
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)  # head h -> kv h // group
        att = (q @ k.transpose(-2, -1)) / hd ** 0.5
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, heads * hd)
        x = x + linear(y, p, h + "attn.c_proj")
        m = rms_norm(x, p[h + "ln_2.weight"], eps)
        gate, up = linear(m, p, h + "mlp.c_fc").chunk(2, dim=-1)
        x = x + linear(F.silu(gate) * up, p, h + "mlp.c_proj")
    x = rms_norm(x, p["ln_f.weight"], eps)
    logits = x @ p.get("lm_head.weight", p["wte.weight"]).T
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
    return logits, loss
