// Memory model against hand derivations: 18 / 16 / 20 bytes per parameter, ZeRO-1's 6 + 12/dp,
// Korthikanti et al. 2022's activation formulas, and the MT-NLG paper's own arithmetic.
#include <catch2/catch.hpp>

#include "parallax/core/presets.hpp"
#include "parallax/core/stack_spec.hpp"
#include "parallax/costmodel/conventions.hpp"
#include "parallax/costmodel/memory.hpp"
#include "parallax/costmodel/predict.hpp"
#include "spec_builders.hpp"

using namespace parallax;

namespace {

PlanSpec mtnlg_plan() { return test::mt_nlg_plan(); }

// A middle stage of MT-NLG (3 layers, no embeddings), derived by hand: per layer the sharded
// weights 12h^2 and column-parallel biases 7h (QKV 3h, FC1 4h) over t, plus the replicated
// row-parallel biases 2h and two LayerNorms 4h.
double mtnlg_middle_stage_params() {
  const double h = 20480;
  return 3 * ((12 * h * h + 7 * h) / 8 + 6 * h);
}

}  // namespace

TEST_CASE("weights + grads + optimizer are exactly 18 bytes per parameter without ZeRO") {
  const ModelSpec m = load_model("mt-nlg-530b");
  JobSpec j;
  const auto mem = stage_memory(m, j, mtnlg_plan());
  const StageMemory& s = mem[10];
  CHECK(s.params == Approx(mtnlg_middle_stage_params()).epsilon(1e-15));
  CHECK(s.weights_bytes + s.grads_bytes + s.optimizer_bytes ==
        Approx(18 * mtnlg_middle_stage_params()).epsilon(1e-15));
  CHECK(s.weights_bytes == Approx(2 * s.params));
  CHECK(s.grads_bytes == Approx(4 * s.params));
  CHECK(s.optimizer_bytes == Approx(12 * s.params));
}

TEST_CASE("the distributed optimizer (ZeRO-1) stores 6 + 12/dp bytes per parameter") {
  const ModelSpec m = load_model("mt-nlg-530b");
  PlanSpec p = mtnlg_plan();
  p.zero = 1;
  const auto mem = stage_memory(m, JobSpec{}, p);
  const StageMemory& s = mem[10];
  CHECK(s.weights_bytes + s.grads_bytes + s.optimizer_bytes ==
        Approx((6 + 12.0 / 8) * mtnlg_middle_stage_params()).epsilon(1e-15));
}

TEST_CASE("16- and 20-bytes-per-parameter conventions are a named setting") {
  const ModelSpec m = load_model("mt-nlg-530b");
  JobSpec j;
  j.bytes_per_param = ParamBytesConvention::b16;
  auto s = stage_memory(m, j, mtnlg_plan())[10];
  CHECK(s.weights_bytes + s.grads_bytes + s.optimizer_bytes == Approx(16 * s.params));
  j.bytes_per_param = ParamBytesConvention::b20;
  s = stage_memory(m, j, mtnlg_plan())[10];
  CHECK(s.weights_bytes + s.grads_bytes + s.optimizer_bytes == Approx(20 * s.params));
  CHECK(bytes_per_param(ParamBytesConvention::b20) == 20);
}

TEST_CASE("Korthikanti activation bytes per layer for every recompute and SP case") {
  const ModelSpec m = load_model("mt-nlg-530b");  // s 2048, h 20480, a 128
  const double sbh = 2048.0 * 1 * 20480;
  // 5 a s / h = 5 * 128 * 2048 / 20480 = 64
  CHECK(layer_activation_bytes(m, 1, 8, false, Recompute::none) == Approx(sbh * (10 + 3 + 8)));
  CHECK(layer_activation_bytes(m, 1, 8, true, Recompute::none) == Approx(sbh / 8 * (34 + 64)));
  CHECK(layer_activation_bytes(m, 1, 8, false, Recompute::selective) == Approx(sbh * 13));
  CHECK(layer_activation_bytes(m, 1, 8, true, Recompute::selective) == Approx(sbh / 8 * 34));
  CHECK(layer_activation_bytes(m, 1, 8, false, Recompute::full) == Approx(2 * sbh));
  CHECK(layer_activation_bytes(m, 1, 8, true, Recompute::full) == Approx(2 * sbh / 8));
  // No parallelism: 34 s b h + 5 a s^2 b.
  CHECK(layer_activation_bytes(m, 2, 1, false, Recompute::none) ==
        Approx(34 * 2 * sbh + 5 * 128.0 * 2048 * 2048 * 2));
}

TEST_CASE("1F1B keeps min(pp - k, m) micro-batches; interleaving multiplies stage 0") {
  PlanSpec p;
  p.pp = 4;
  p.num_micro_batches = 8;
  for (int64_t k = 0; k < 4; ++k) CHECK(in_flight_micro_batches(p, k) == Approx(4 - k));
  p.num_micro_batches = 2;
  CHECK(in_flight_micro_batches(p, 0) == Approx(2));
  p.num_micro_batches = 8;
  p.schedule = Schedule::gpipe;
  CHECK(in_flight_micro_batches(p, 3) == Approx(8));
  p.schedule = Schedule::interleaved;
  p.vpp = 2;
  // pp * (1 + (pp - 1) / (pp * vpp)) = 4 * (1 + 3/8)
  CHECK(in_flight_micro_batches(p, 0) == Approx(4 * (1 + 3.0 / 8)));
}

TEST_CASE("stage activations are layers x in-flight x Korthikanti per-layer bytes") {
  const ModelSpec m = load_model("mt-nlg-530b");
  const auto mem = stage_memory(m, JobSpec{}, mtnlg_plan());
  const double sbh = 2048.0 * 20480;
  CHECK(mem[0].activations_bytes == Approx(3 * 35 * 2 * sbh));
  CHECK(mem[34].activations_bytes == Approx(3 * 1 * 2 * sbh));
}

TEST_CASE("MT-NLG paper memory arithmetic") {
  const ModelSpec m = load_model("mt-nlg-530b");
  // 20 bytes per parameter puts 530B parameters above 10 TB.
  CHECK(model_params(m) == Approx(530e9).epsilon(0.01));
  CHECK(model_params(m) * bytes_per_param(ParamBytesConvention::b20) > 10e12);
  // Stored layer-boundary activations: 16.9 TB for a batch of 1920, 8.8 GB for one sequence.
  CHECK(layer_boundary_activation_bytes(m, 1920) == Approx(16.9e12).epsilon(0.005));
  CHECK(layer_boundary_activation_bytes(m, 1) == Approx(8.8e9).epsilon(0.005));
}

TEST_CASE("the MT-NLG plan fits in 80 GB with the breakdown") {
  const ModelSpec m = load_model("mt-nlg-530b");
  const ClusterSpec c = load_cluster("dgx-a100-superpod");
  JobSpec j;
  j.global_batch = 1920;
  const Prediction pr = predict(m, c, j, mtnlg_plan(), load_profile(c.profile));
  CHECK(pr.fits);
  CHECK(pr.peak_bytes + pr.reserve_bytes < 80 * 1024.0 * 1024 * 1024);
  REQUIRE(pr.memory.size() == 35);
  // Stage 0 holds the most activations (35 in flight) and the embedding.
  CHECK(pr.peak_stage == 0);
}

TEST_CASE("a model without dropout stores no masks: Korthikanti's terms less their mask bytes") {
  ModelSpec m = load_model("mt-nlg-530b");  // s 2048, h 20480, a 128
  m.dropout = 0;
  const double sbh = 2048.0 * 1 * 20480;
  // The two residual-branch masks (1 byte each, replicated without SP) leave 10 -> 8 and 34 -> 32;
  // attention keeps only its 2-byte softmax output: 5 a s/h = 64 -> 2 a s/h = 25.6.
  CHECK(layer_activation_bytes(m, 1, 8, false, Recompute::none) == Approx(sbh * (8 + 3 + 25.6 / 8)));
  CHECK(layer_activation_bytes(m, 1, 8, true, Recompute::none) == Approx(sbh / 8 * (32 + 25.6)));
  CHECK(layer_activation_bytes(m, 1, 8, false, Recompute::selective) == Approx(sbh * 11));
  CHECK(layer_activation_bytes(m, 1, 8, true, Recompute::selective) == Approx(sbh / 8 * 32));
  // Full recompute keeps the layer input alone, dropout or not.
  CHECK(layer_activation_bytes(m, 1, 8, true, Recompute::full) == Approx(2 * sbh / 8));
  // Fused attention's row log-sum-exp is no mask: 4 a / h of s b h stays.
  CHECK(layer_activation_bytes(m, 1, 8, true, Recompute::none, Attention::fused) ==
        Approx(sbh / 8 * (32 + 4 * 128.0 / 20480)));
}

TEST_CASE("the loss holds what the stack keeps per logit: flash-attn's fused loss 4 bytes, Megatron's 10") {
  // One stage, no parallelism: the last stage's buffers differ only by the loss's logits, s b v
  // of them (v padded to 128 by Megatron-LM's rule), 10 - 4 bytes each.
  ModelSpec m = load_model("gpt2-124m");
  PlanSpec p;
  p.micro_batch = 4;
  p.num_micro_batches = 1;
  JobSpec megatron, foundry;
  apply_stack(load_stack("megatron-lm"), megatron);
  apply_stack(load_stack("llm-foundry"), foundry);
  CHECK(megatron.loss_bytes_per_logit == 10);
  CHECK(foundry.loss_bytes_per_logit == 4);
  foundry.attention = megatron.attention;  // only the loss differs
  foundry.kernels = megatron.kernels;
  const double logits =
      4.0 * static_cast<double>(m.seq_len) * static_cast<double>(padded_vocab(m.vocab, 1));
  const double diff = stage_memory(m, megatron, p)[0].buffers_bytes -
                      stage_memory(m, foundry, p)[0].buffers_bytes;
  CHECK(diff == Approx(logits * (10 - 4)));
}

TEST_CASE("TorchTitan's op-level selective recompute keeps the input, every second matmul and attention") {
  // Llama 3 8B (h 4096, 32 heads of 128, 8 KV heads, ffn 14336), one sequence of 8192, tp 1.
  // TorchTitan's Llama issues q, k, v, o, w1, w3, w2; the 1st, 3rd, 5th and 7th outputs are saved:
  // q 4096 + v 1024 + w1 14336 + w2 4096 wide, with the layer input (4096) and the attention
  // output (4096): 31744 16-bit values per token, plus the fp32 log-sum-exp of 32 heads.
  ModelSpec m = test::gpt_shape("llama3-8b", 32, 4096, 32, 14336, 8192, 128256);
  m.kv_heads = 8;
  m.activation = Activation::swiglu;
  m.dropout = 0;
  const double per_token = 2 * 31744.0 + 4 * 32;
  CHECK(layer_activation_bytes(m, 1, 1, false, Recompute::selective, Attention::fused,
                               SelectiveRecompute::alternate_matmuls) == Approx(8192 * per_token));
  // 15.5 h bytes per token against Megatron's selective recompute of the same layer, which keeps
  // (no dropout) the norms' and the two linear inputs 8h, Q and the attention output 4h, K and V
  // 4 x 1024 = h, and the fused SwiGLU's gate, up and product 6 x 14336 = 21h: 34h.
  CHECK(per_token / 4096 == Approx(15.5 + 4 * 32 / 4096.0));
  CHECK(layer_activation_bytes(m, 1, 1, false, Recompute::selective, Attention::fused) ==
        Approx(8192 * 4096 * (8 + 4 + 1 + 21.0)));
}

TEST_CASE("a Llama layer keeps what its grouped-query attention and SwiGLU save, not GPT's 34") {
  // Llama 3 8B as above, tp 8 without SP, no recompute, fused attention, batch 1 of 8192.
  ModelSpec m = test::gpt_shape("llama3-8b", 32, 4096, 32, 14336, 8192, 128256);
  m.kv_heads = 8;
  m.activation = Activation::swiglu;
  m.dropout = 0;
  const double sbh = 8192.0 * 4096;
  const double lse = 4 * 32.0 / 4096;  // the fp32 log-sum-exp per head, over s b h
  // Replicated: the two norms' inputs and the QKV and MLP inputs, 8h. Split over t: Q and the
  // attention output 4h, K and V 4 x 1024 = 1h, the MLP op by op (silu and mul save their inputs:
  // gate, SiLU output, up, product) 8 x 14336 = 28h, or fused 6 x 14336 = 21h.
  CHECK(tp_sharded_bytes_per_token(m, Kernels::eager) == Approx(4096 * (4 + 1 + 28.0)));
  CHECK(layer_activation_bytes(m, 1, 8, false, Recompute::none, Attention::fused,
                               SelectiveRecompute::attention_core, Kernels::eager) ==
        Approx(sbh * (8 + (33 + lse) / 8)));
  CHECK(layer_activation_bytes(m, 1, 8, true, Recompute::none, Attention::fused,
                               SelectiveRecompute::attention_core, Kernels::fused) ==
        Approx(sbh / 8 * (8 + 26 + lse)));
  // GPT's shape (4h GELU MLP, as many KV heads as heads) is Korthikanti's 24.
  const ModelSpec gpt = load_model("mt-nlg-530b");
  CHECK(tp_sharded_bytes_per_token(gpt, Kernels::eager) == Approx(24.0 * 20480));
}

TEST_CASE("TorchTitan's FSDP inside a pipeline holds ZeRO-1's 6 + 12/dp bytes per parameter") {
  // With pp > 1 TorchTitan keeps each stage's parameters gathered (no reshard after forward) and
  // its gradients unsharded until the last micro-batch: 2 bytes of 16-bit weights and 4 of fp32
  // gradients per parameter, the optimizer's 12 sharded over dp. The plan says ZeRO-3.
  const ModelSpec m = load_model("mt-nlg-530b");
  PlanSpec p = mtnlg_plan();
  p.zero = 3;
  JobSpec j;
  j.pipeline.sharded_stages = true;
  CHECK(zero_stage_run(j, p) == 1);
  const StageMemory s = stage_memory(m, j, p)[10];
  CHECK(s.weights_bytes == Approx(2 * mtnlg_middle_stage_params()));
  CHECK(s.grads_bytes == Approx(4 * mtnlg_middle_stage_params()));
  CHECK(s.optimizer_bytes == Approx(12 * mtnlg_middle_stage_params() / 8));
  // Without a pipeline the stack shards as the plan says: ZeRO-3's weights over dp.
  PlanSpec flat = p;
  flat.pp = 1;
  flat.dp = p.dp * p.pp;
  CHECK(zero_stage_run(j, flat) == 3);
  // A stack whose pipeline refuses sharding keeps the plan's stage (validate_plan refuses it).
  j.pipeline.sharded_stages = false;
  CHECK(zero_stage_run(j, p) == 3);
}
