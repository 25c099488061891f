#pragma once
// The builders ops.cpp and moe_ops.cpp share: one layer's dimensions on a rank and the helpers
// that append GEMMs, memory-bound kernels, linear layers (with their fp8 casts) and TP collectives.
#include <string>
#include <vector>

#include "parallax/costmodel/ops.hpp"

namespace parallax::op_build {

struct LayerDims {
  double b, s, s_kv, h, a_local, kv_local, d, f_local, t;
  bool fp8;
  bool sp;  // sequence parallel
  Fp8Recipe recipe;
  double n_ln;  // elements a norm / residual kernel touches on this rank (÷t with SP)
  double e;     // activation bytes per element
  bool fused;   // FlashAttention-style attention core
  bool unpad;   // its inputs packed and its output scattered back (JobSpec::attention_unpad)
  double mask;  // bytes of dropout mask per element (0: the model trains without dropout)
  ElementwiseBytes eb;
  // Mixture of experts: expert-parallel and expert tensor-parallel sizes, and the most loaded
  // expert-parallel rank's tokens over the mean (ShardShape::moe_imbalance).
  double ep, etp, imbalance;
};

LayerDims dims(const ModelSpec& m, const ShardShape& sh);
void add_gemm(std::vector<Op>& ops, std::string name, Phase phase, GemmShape g);
void add_mem(std::vector<Op>& ops, std::string name, Phase phase, double bytes, double flops);
// A linear layer Y[M,N] = X[M,K] W[K,N]: forward, data-grad dX = dY W^T, weight-grad dW = X^T dY.
void add_linear(std::vector<Op>& fwd, std::vector<Op>& bwd, const std::string& name, double m,
                double n, double k);
enum class TpSplit { column, row };
// A linear layer of the transformer block, with its fp8 casts in an fp8 job.
void add_layer_linear(std::vector<Op>& fwd, std::vector<Op>& bwd, const std::string& name,
                      const LayerDims& L, TpSplit split, double m, double n, double k);
// The FFN of an MoE layer on this rank in place of the dense MLP (moe_ops.cpp): router, token
// permutation, grouped expert GEMMs, un-permutation, and the shared experts.
void add_moe_ffn(std::vector<Op>& fwd, std::vector<Op>& bwd, const ModelSpec& m, const LayerDims& L);
CommOp comm(const std::string& name, CommKind kind, Phase phase, double bytes);
// The conjugate TP pair around a column- and row-parallel block (reduce-scatter + all-gather
// with sequence parallelism).
void add_tp_pair(std::vector<CommOp>& out, const std::string& name, Phase fwd_phase, double bytes,
                 bool sp, bool with_backward);

}  // namespace parallax::op_build
