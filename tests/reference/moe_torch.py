"""The mixture-of-experts Llama of the project's PyTorch reference (issue 27), for moe_reference.py:
llama_torch.py's model with the FFN of every MoE layer (ModelSpec::is_moe_layer: l >= first_k_dense
and l % layer_freq == 0) a mixture of SwiGLU experts, routed as Megatron-Core routes
(megatron/core/transformer/moe/router.py TopKRouter and moe_utils.py, read at commit d98e8a64dd):

  logits = x @ router.T                        bias-free linear, hidden -> num_experts
  softmax: top-k of the logits, probs = softmax over those k logits (topk_routing_with_score_function,
           use_pre_softmax False: Mixtral's renormalised top-k)
  sigmoid: s = sigmoid(logits), top-k of s, probs = s_k / (sum_k s_k + 1e-20) (k = 1: s itself)
  out = sum_k probs_k * expert_{e_k}(x) + shared(x)    (dropless: every token reaches its k experts)

Each routed expert is down(silu(gate x) * up x) of width expert_ffn_hidden; the shared experts are one
such MLP of width shared_experts * shared_expert_ffn_hidden (Megatron-Core's SharedExpertMLP).

Load balancing (switch_load_balancing_loss_func, moe_router_load_balancing_type aux_loss) per
micro-batch of T tokens: scores = softmax(logits) over all experts (sigmoid: s / (sum s + 1e-20);
compute_routing_scores_for_aux_loss), f_i = tokens routed to expert i (no gradient),
aux = coeff * E / (k T^2) * sum_i f_i * sum_x scores(x, i); the training objective is the mean over
micro-batches of (cross-entropy + the sum of the layers' aux), as Megatron-Core scales the aux loss
with the main loss (MoEAuxLossAutoScaler).

Weights (out, in) under the executor's internal names: h.N.mlp.router.weight (E, C);
h.N.mlp.experts.E.c_fc.weight (2 Fe, C) rows gate | up; h.N.mlp.experts.E.c_proj.weight (C, Fe);
h.N.mlp.shared_experts.c_fc.weight (2 Fs, C); h.N.mlp.shared_experts.c_proj.weight (C, Fs)."""
import torch
import torch.nn.functional as F

from llama_torch import rms_norm, rope, rope_inv_freq


def is_moe_layer(moe, l):
    return moe["num_experts"] > 0 and l >= moe.get("first_k_dense", 0) and l % moe.get("layer_freq", 1) == 0


def swiglu_mlp(x, p, prefix):
    gate, up = (x @ p[prefix + "c_fc.weight"].T).chunk(2, dim=-1)
    return (F.silu(gate) * up) @ p[prefix + "c_proj.weight"].T


def route(logits, moe):
    """(top-k expert indices (N, k), their probabilities (N, k), aux-loss scores (N, E))."""
    k = moe["top_k"]
    if moe.get("router", "softmax") == "softmax":
        top, idx = torch.topk(logits, k, dim=1)
        return idx, torch.softmax(top, dim=-1), torch.softmax(logits, dim=-1)
    s = torch.sigmoid(logits)
    top, idx = torch.topk(s, k, dim=1)
    probs = top / (top.sum(-1, keepdim=True) + 1e-20) if k > 1 else top
    return idx, probs, s / (s.sum(-1, keepdim=True) + 1e-20)


def topk_margin(logits, k):
    """The smallest gap between a token's k-th and (k+1)-th largest router logit: how far the
    routing is from a tie (a tie, or a gap below float32's rounding, could route otherwise)."""
    if k == logits.shape[1]:
        return float("inf")
    top = torch.topk(logits, k + 1, dim=1).values
    return (top[:, k - 1] - top[:, k]).min().item()


def moe_ffn(x, p, h, moe):
    """x (T, C), the tokens of one micro-batch: (the FFN output (T, C), the aux loss, the margin)."""
    E, k = moe["num_experts"], moe["top_k"]
    logits = x @ p[h + "mlp.router.weight"].T
    idx, probs, scores = route(logits, moe)
    with torch.no_grad():
        tokens_per_expert = torch.zeros(E, dtype=x.dtype).index_add_(
            0, idx.reshape(-1), torch.ones(idx.numel(), dtype=x.dtype))
    T = x.shape[0]
    aux = (scores.sum(0) * tokens_per_expert).sum() * (moe.get("aux_loss_coeff", 0.0) * E / (k * T * T))
    out = torch.zeros_like(x)
    for e in range(E):
        rows, slot = (idx == e).nonzero(as_tuple=True)
        if rows.numel() == 0:
            continue
        y = swiglu_mlp(x[rows], p, h + f"mlp.experts.{e}.")
        out = out.index_add(0, rows, probs[rows, slot].unsqueeze(-1) * y)
    if moe.get("shared_experts", 0) > 0:
        out = out + swiglu_mlp(x, p, h + "mlp.shared_experts.")
    return out, aux, topk_margin(logits.detach(), k)


def forward(p, idx, targets, model, micro_batch=1, eps=1e-5):
    """(logits (B, T, V), the objective: mean cross-entropy + mean over micro-batches of the summed
    aux losses, the smallest top-k margin). Micro-batches are `micro_batch` consecutive sequences."""
    layers, heads, kv_heads, moe = model["layers"], model["heads"], model["kv_heads"], model["moe"]
    B, T = idx.shape
    hd = p["h.0.attn.c_proj.weight"].shape[1] // heads
    inv_freq = rope_inv_freq(hd, model.get("rope_base", 10000.0), model.get("rope_scaling"))
    group = heads // kv_heads
    x = p["wte.weight"][idx]
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    aux_total = 0.0
    margin = float("inf")
    for l in range(layers):
        h = f"h.{l}."
        a = rms_norm(x, p[h + "ln_1.weight"], eps)
        qkv = a @ p[h + "attn.c_attn.weight"].T
        q, k, v = qkv.split([heads * hd, kv_heads * hd, kv_heads * hd], dim=-1)
        q = q.view(B, T, heads, hd).transpose(1, 2)
        k = k.view(B, T, kv_heads, hd).transpose(1, 2)
        v = v.view(B, T, kv_heads, hd).transpose(1, 2)
        q, k = rope(q, inv_freq), rope(k, inv_freq)
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        att = (q @ k.transpose(-2, -1)) / hd ** 0.5
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, heads * hd)
        x = x + y @ p[h + "attn.c_proj.weight"].T
        m = rms_norm(x, p[h + "ln_2.weight"], eps)
        if not is_moe_layer(moe, l):
            x = x + swiglu_mlp(m, p, h + "mlp.")
            continue
        outs = []
        for g in range(0, B, micro_batch):
            out, aux, gap = moe_ffn(m[g:g + micro_batch].reshape(-1, m.shape[-1]), p, h, moe)
            outs.append(out.view(-1, T, m.shape[-1]))
            aux_total = aux_total + aux / (B // micro_batch)
            margin = min(margin, gap)
        x = x + torch.cat(outs, dim=0)
    x = rms_norm(x, p["ln_f.weight"], eps)
    logits = x @ p.get("lm_head.weight", p["wte.weight"]).T
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1)) + aux_total
    return logits, loss, margin
