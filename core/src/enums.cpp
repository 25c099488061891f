// Spellings of every enum as they appear in JSON files and on the command line.
#include "parallax/core/gpu_spec.hpp"
#include "parallax/core/job_spec.hpp"
#include "parallax/core/model_spec.hpp"
#include "parallax/core/plan_spec.hpp"

namespace parallax {

const char* to_string(Dtype d) {
  switch (d) {
    case Dtype::fp32: return "fp32";
    case Dtype::tf32: return "tf32";
    case Dtype::bf16: return "bf16";
    case Dtype::fp16: return "fp16";
    case Dtype::fp8: return "fp8";
  }
  return "?";
}

double dtype_bytes(Dtype d) {
  switch (d) {
    case Dtype::fp32: return 4;
    case Dtype::tf32: return 4;  // tf32 is a math mode; the tensors are stored as fp32
    case Dtype::bf16: return 2;
    case Dtype::fp16: return 2;
    case Dtype::fp8: return 1;
  }
  return 0;
}

const char* to_string(ParamBytesConvention c) {
  switch (c) {
    case ParamBytesConvention::b16: return "16";
    case ParamBytesConvention::b18: return "18";
    case ParamBytesConvention::b20: return "20";
  }
  return "?";
}

const char* to_string(Attention a) {
  switch (a) {
    case Attention::unfused: return "unfused";
    case Attention::fused: return "fused";
  }
  return "?";
}

const char* to_string(Kernels k) {
  switch (k) {
    case Kernels::fused: return "fused";
    case Kernels::eager: return "eager";
  }
  return "?";
}

const char* to_string(Exporter e) {
  switch (e) {
    case Exporter::none: return "none";
    case Exporter::megatron: return "megatron";
    case Exporter::deepspeed: return "deepspeed";
    case Exporter::parallax: return "parallax";
    case Exporter::torchtitan: return "torchtitan";
  }
  return "?";
}

int bytes_per_param(ParamBytesConvention c) {
  switch (c) {
    case ParamBytesConvention::b16: return 16;
    case ParamBytesConvention::b18: return 18;
    case ParamBytesConvention::b20: return 20;
  }
  return 0;
}

const char* to_string(Activation a) {
  switch (a) {
    case Activation::gelu: return "gelu";
    case Activation::swiglu: return "swiglu";
  }
  return "?";
}

const char* to_string(Position p) {
  switch (p) {
    case Position::learned: return "learned";
    case Position::rope: return "rope";
    case Position::alibi: return "alibi";
  }
  return "?";
}

const char* to_string(Norm n) {
  switch (n) {
    case Norm::layernorm: return "layernorm";
    case Norm::rmsnorm: return "rmsnorm";
  }
  return "?";
}

const char* to_string(Router r) {
  switch (r) {
    case Router::softmax: return "softmax";
    case Router::sigmoid: return "sigmoid";
  }
  return "?";
}

const char* to_string(Recompute r) {
  switch (r) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::full: return "full";
  }
  return "?";
}

const char* to_string(Schedule s) {
  switch (s) {
    case Schedule::gpipe: return "gpipe";
    case Schedule::one_f_one_b: return "1f1b";
    case Schedule::interleaved: return "interleaved";
  }
  return "?";
}

const char* to_string(MoeDispatcher d) {
  switch (d) {
    case MoeDispatcher::alltoall: return "alltoall";
    case MoeDispatcher::deepep: return "deepep";
    case MoeDispatcher::hybridep: return "hybridep";
  }
  return "?";
}

const char* to_string(Fp8Scaling s) {
  switch (s) {
    case Fp8Scaling::delayed: return "delayed";
    case Fp8Scaling::current: return "current";
    case Fp8Scaling::mxfp8: return "mxfp8";
  }
  return "?";
}

std::optional<Fp8Scaling> fp8_scaling_from(const std::string& name) {
  for (Fp8Scaling s : kFp8Scalings)
    if (name == to_string(s)) return s;
  return std::nullopt;
}

bool fp8_scaling_supported(Fp8Scaling s, const GpuSpec& g) {
  const std::optional<int> major = compute_capability_major(g);
  return s != Fp8Scaling::mxfp8 || !major || *major >= 10;
}

std::optional<MoeDispatcher> moe_dispatcher_from(const std::string& name) {
  for (MoeDispatcher d : kMoeDispatchers)
    if (name == to_string(d)) return d;
  return std::nullopt;
}

}  // namespace parallax
