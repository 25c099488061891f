"""The GPT-2 forward of the project's PyTorch reference (issue 6), shared by gpt_reference.py
(the executor's golden file) and hf_loss.py (the loss of a Hugging Face export): written from the
architecture, weights stored (out, in) as the executor holds them: y = x @ W.T + b."""
import torch
import torch.nn.functional as F


def forward(p, idx, targets, layers, heads, eps=1e-5):
    """Logits (B, T, V) and the mean cross-entropy of `targets`. p maps GPT-2 names to tensors;
    "lm_head.weight" when the output embedding is untied, else wte is used."""
    B, T = idx.shape
    C = p["wte.weight"].shape[1]
    hs = C // heads
    x = p["wte.weight"][idx] + p["wpe.weight"][:T]
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for l in range(layers):
        h = f"h.{l}."
        a = F.layer_norm(x, (C,), p[h + "ln_1.weight"], p[h + "ln_1.bias"], eps=eps)
        qkv = a @ p[h + "attn.c_attn.weight"].T + p[h + "attn.c_attn.bias"]
        q, k, v = qkv.split(C, dim=-1)
        q, k, v = (z.view(B, T, heads, hs).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / hs ** 0.5
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + y @ p[h + "attn.c_proj.weight"].T + p[h + "attn.c_proj.bias"]
        m = F.layer_norm(x, (C,), p[h + "ln_2.weight"], p[h + "ln_2.bias"], eps=eps)
        m = F.gelu(m @ p[h + "mlp.c_fc.weight"].T + p[h + "mlp.c_fc.bias"], approximate="tanh")
        x = x + m @ p[h + "mlp.c_proj.weight"].T + p[h + "mlp.c_proj.bias"]
    x = F.layer_norm(x, (C,), p["ln_f.weight"], p["ln_f.bias"], eps=eps)
    logits = x @ p.get("lm_head.weight", p["wte.weight"]).T
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
    return logits, loss
