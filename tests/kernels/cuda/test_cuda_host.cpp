// The CUDA backend's host-side logic, checked on the CPU (these run in every CUDA build, GPU or
// not): the row-major -> cuBLAS column-major GEMM mapping against a column-major reference
// GEMM with cuBLAS's contract; the backend's actual GEMM sequences for linear layers and causal
// attention (linear_plan.hpp, what src/linear.cpp runs) with that reference GEMM, bf16 operands
// and the CUDA softmax kernels' row logic, against the CPU kernels; bf16 rounding against the
// CUDA toolkit's own host conversion; nccl-tests' bus bandwidth factors; and
// `parallax run --backend cuda` without a device.
#include <catch2/catch.hpp>

#include <cuda_bf16.h>
#include <sys/wait.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <iterator>
#include <utility>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include <nccl.h>

#include "parallax/kernels/cpu.hpp"
#include "parallax/kernels/cuda/blas_loader.hpp"
#include "parallax/kernels/cuda/device.hpp"
#include "parallax/kernels/cuda/gemm_args.hpp"
#include "parallax/kernels/cuda/linear_plan.hpp"
#include "parallax/kernels/cuda/reduction_geometry.hpp"
#include "random_data.hpp"

namespace k = parallax::kernels;
namespace cu = parallax::kernels::cuda;

namespace {

using parallax::test::randn;

// cuBLAS's GEMM contract, column-major: C = alpha op(X) op(Y) + beta C, op(X) m x k.
void gemm_col_major(bool tx, bool ty, int64_t m, int64_t n, int64_t kk, float alpha,
                    const std::function<double(int64_t)>& X, int64_t ldx,
                    const std::function<double(int64_t)>& Y, int64_t ldy, float beta,
                    const std::function<double(int64_t)>& Cget,
                    const std::function<void(int64_t, double)>& Cset, int64_t ldc) {
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      double s = 0;
      for (int64_t l = 0; l < kk; ++l) {
        const double x = tx ? X(l + i * ldx) : X(i + l * ldx);
        const double y = ty ? Y(j + l * ldy) : Y(l + j * ldy);
        s += x * y;
      }
      const int64_t c = i + j * ldc;
      Cset(c, alpha * s + (beta != 0.0f ? beta * Cget(c) : 0.0));
    }
}

// Reads/writes an operand of the given DType: bf16 storage is kernels::bf16.
double load(const void* p, cu::DType t, int64_t i) {
  return t == cu::DType::bf16 ? k::to_float(static_cast<const k::bf16*>(p)[i])
                              : static_cast<const float*>(p)[i];
}
void store(void* p, cu::DType t, int64_t i, double v) {
  if (t == cu::DType::bf16)
    static_cast<k::bf16*>(p)[i] = k::to_bf16(static_cast<float>(v));
  else
    static_cast<float*>(p)[i] = static_cast<float>(v);
}

// What Blas::gemm does, with the reference in place of cublasGemm(StridedBatched)Ex.
void reference_blas_gemm(const cu::RowMajorGemm& g, float alpha, const void* A, cu::DType at,
                         const void* B, cu::DType bt, float beta, void* C, cu::DType ct) {
  const cu::ColMajorGemm c = cu::to_col_major(g);
  REQUIRE(c.first_is_b);
  // cuBLAS's leading-dimension rules (else CUBLAS_STATUS_INVALID_VALUE on the GPU).
  CHECK(c.ld_first >= std::max<int64_t>(1, c.trans_first ? c.k : c.m));
  CHECK(c.ld_second >= std::max<int64_t>(1, c.trans_second ? c.n : c.k));
  CHECK(c.ldc >= std::max<int64_t>(1, c.m));
  for (int64_t b = 0; b < c.batch; ++b) {
    const int64_t of = b * c.stride_first, os = b * c.stride_second, oc = b * c.stride_c;
    gemm_col_major(
        c.trans_first, c.trans_second, c.m, c.n, c.k, alpha,
        [&](int64_t i) { return load(B, bt, of + i); }, c.ld_first,
        [&](int64_t i) { return load(A, at, os + i); }, c.ld_second, beta,
        [&](int64_t i) { return load(C, ct, oc + i); },
        [&](int64_t i, double v) { store(C, ct, oc + i, v); }, c.ldc);
  }
}

std::vector<k::bf16> to_bf16(const std::vector<float>& x) {
  std::vector<k::bf16> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = k::to_bf16(x[i]);
  return out;
}
std::vector<float> to_float(const std::vector<k::bf16>& x) {
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = k::to_float(x[i]);
  return out;
}
template <class V>
double normalised_error(const V& got, const std::vector<float>& want) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    err = std::max(err, std::abs(static_cast<double>(got[i]) - want[i]));
    ref = std::max(ref, std::abs(static_cast<double>(want[i])));
  }
  return err / std::max(ref, 1e-30);
}

// The CUDA softmax kernels' row logic (one warp per row there), serially.
void softmax_rows(k::bf16* att, const float* scores, int64_t rows, int64_t T) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t t = r % T;
    float m = -INFINITY, s = 0;
    for (int64_t j = 0; j <= t; ++j) m = std::fmax(m, scores[r * T + j]);
    for (int64_t j = 0; j <= t; ++j) s += std::exp(scores[r * T + j] - m);
    for (int64_t j = 0; j < T; ++j)
      att[r * T + j] = j <= t ? k::to_bf16(std::exp(scores[r * T + j] - m) / s) : k::bf16{0};
  }
}
void softmax_back_rows(k::bf16* dpre, const k::bf16* att, const float* datt, float scale,
                       int64_t rows, int64_t T) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t t = r % T;
    float w = 0;
    for (int64_t j = 0; j <= t; ++j) w += k::to_float(att[r * T + j]) * datt[r * T + j];
    for (int64_t j = 0; j < T; ++j)
      dpre[r * T + j] = j <= t ? k::to_bf16(k::softmax_dpre(k::to_float(att[r * T + j]), datt[r * T + j], w, scale))
                               : k::bf16{0};
  }
}

}  // namespace

TEST_CASE("row-major GEMMs map onto cuBLAS's column-major contract", "[cuda][host]") {
  std::mt19937 gen(3);
  for (int trial = 0; trial < 40; ++trial) {
    cu::RowMajorGemm g;
    g.trans_a = trial & 1;
    g.trans_b = (trial >> 1) & 1;
    g.M = 1 + static_cast<int64_t>(gen() % 7);
    g.N = 1 + static_cast<int64_t>(gen() % 6);
    g.K = 1 + static_cast<int64_t>(gen() % 5);
    g.lda = (g.trans_a ? g.M : g.K) + static_cast<int64_t>(gen() % 3);
    g.ldb = (g.trans_b ? g.K : g.N) + static_cast<int64_t>(gen() % 3);
    g.ldc = g.N + static_cast<int64_t>(gen() % 3);
    g.batch = 1 + static_cast<int64_t>(gen() % 3);
    g.stride_a = (g.trans_a ? g.K : g.M) * g.lda;
    g.stride_b = (g.trans_b ? g.N : g.K) * g.ldb;
    g.stride_c = g.M * g.ldc;
    auto A = randn(static_cast<size_t>(g.stride_a * g.batch), 1 + trial);
    auto B = randn(static_cast<size_t>(g.stride_b * g.batch), 100 + trial);
    auto C = randn(static_cast<size_t>(g.stride_c * g.batch), 200 + trial);
    auto want = C;
    for (int64_t b = 0; b < g.batch; ++b)
      for (int64_t i = 0; i < g.M; ++i)
        for (int64_t j = 0; j < g.N; ++j) {
          double s = 0;
          for (int64_t l = 0; l < g.K; ++l) {
            const double a = g.trans_a ? A[b * g.stride_a + l * g.lda + i] : A[b * g.stride_a + i * g.lda + l];
            const double x = g.trans_b ? B[b * g.stride_b + j * g.ldb + l] : B[b * g.stride_b + l * g.ldb + j];
            s += a * x;
          }
          float& c = want[b * g.stride_c + i * g.ldc + j];
          c = static_cast<float>(0.5 * s + 2.0 * c);
        }
    reference_blas_gemm(g, 0.5f, A.data(), cu::DType::f32, B.data(), cu::DType::f32, 2.0f,
                        C.data(), cu::DType::f32);
    INFO("trial " << trial);
    CHECK(normalised_error(C, want) < 1e-6);
  }
}

TEST_CASE("the CUDA backend's linear GEMM sequence equals the CPU kernels", "[cuda][host]") {
  const int64_t N = 6, C = 10, OC = 7;
  const auto inp = to_bf16(randn(N * C, 1)), w = to_bf16(randn(OC * C, 2)), b = to_bf16(randn(OC, 3));
  const auto dout = to_bf16(randn(N * OC, 4));
  std::vector<k::bf16> out(N * OC);
  auto bias = [](k::bf16* o, const k::bf16* bb, int64_t n, int64_t c) {
    for (int64_t i = 0; i < n * c; ++i) o[i] = k::to_bf16(k::to_float(o[i]) + k::to_float(bb[i % c]));
  };
  cu::matmul_forward_plan(reference_blas_gemm, bias, out.data(), inp.data(), w.data(), b.data(), N, C, OC);
  std::vector<float> want(N * OC);
  k::matmul_forward(want.data(), to_float(inp).data(), to_float(w).data(), to_float(b).data(), N, C, OC);
  CHECK(normalised_error(to_float(out), want) < 1e-2);  // bf16 output

  std::vector<k::bf16> dinp(N * C, k::bf16{0});
  std::vector<float> dw(OC * C, 0.0f), db(OC, 0.0f);
  auto bias_back = [](float* d, const k::bf16* g, int64_t n, int64_t c) {
    for (int64_t i = 0; i < n * c; ++i) d[i % c] += k::to_float(g[i]);
  };
  cu::matmul_backward_plan(reference_blas_gemm, bias_back, dinp.data(), dw.data(), db.data(),
                           dout.data(), inp.data(), w.data(), N, C, OC);
  std::vector<float> want_dinp(N * C, 0.0f), want_dw(OC * C, 0.0f), want_db(OC, 0.0f);
  k::matmul_backward(want_dinp.data(), want_dw.data(), want_db.data(), to_float(dout).data(),
                     to_float(inp).data(), to_float(w).data(), N, C, OC);
  CHECK(normalised_error(to_float(dinp), want_dinp) < 1e-2);
  CHECK(normalised_error(dw, want_dw) < 1e-5);  // fp32 output: only the summation order differs
  CHECK(normalised_error(db, want_db) < 1e-5);
}

TEST_CASE("the CUDA backend's attention GEMM sequence equals the CPU kernels", "[cuda][host]") {
  const int64_t B = 2, T = 5, C = 12, NH = 3;
  // KVH = NH: multi-head; 1: multi-query; NH = 6 over KVH = 2: groups of three query heads.
  for (const auto& [nh, kvh] : {std::pair<int64_t, int64_t>{NH, NH}, {NH, 1}, {6, 2}}) {
    CAPTURE(nh, kvh);
    const int64_t W = cu::attention_qkv_width(C, nh, kvh);
    const auto qkv = to_bf16(randn(B * T * W, 1)), dout = to_bf16(randn(B * T * C, 2));
    std::vector<k::bf16> out(B * T * C), att(B * nh * T * T), dqkv(qkv.size(), k::bf16{0});
    std::vector<float> scores(B * nh * T * T);
    std::vector<k::bf16> dpre(B * nh * T * T);
    cu::attention_forward_plan(reference_blas_gemm, softmax_rows, out.data(), att.data(),
                               qkv.data(), scores.data(), B, T, C, nh, kvh);
    std::vector<float> want(B * T * C), want_att(B * nh * T * T), want_dqkv(qkv.size(), 0.0f);
    k::attention_forward(want.data(), want_att.data(), to_float(qkv).data(), B, T, C, nh, kvh);
    CHECK(normalised_error(to_float(att), want_att) < 1e-2);
    CHECK(normalised_error(to_float(out), want) < 2e-2);
    cu::attention_backward_plan(reference_blas_gemm, softmax_back_rows, dqkv.data(), dout.data(),
                                qkv.data(), att.data(), scores.data(), dpre.data(), B, T, C, nh,
                                kvh);
    k::attention_backward(want_dqkv.data(), to_float(dout).data(), to_float(qkv).data(),
                          want_att.data(), B, T, C, nh, kvh);
    CHECK(normalised_error(to_float(dqkv), want_dqkv) < 3e-2);
  }
}

TEST_CASE("bf16 rounding equals the CUDA toolkit's __float2bfloat16_rn", "[cuda][host][bf16]") {
  std::mt19937 gen(11);
  int64_t mismatches = 0;
  for (int i = 0; i < 1000000; ++i) {
    const auto u = static_cast<uint32_t>(gen());
    float f;
    std::memcpy(&f, &u, 4);
    if (std::isnan(f)) continue;  // both give a NaN; the payloads differ by design
    const __nv_bfloat16 ref = __float2bfloat16_rn(f);
    uint16_t ref_bits;
    std::memcpy(&ref_bits, &ref, 2);
    mismatches += ref_bits != k::to_bf16(f).bits;
  }
  CHECK(mismatches == 0);
  CHECK(std::isnan(k::to_float(k::to_bf16(std::nanf("")))));
}

namespace {

// Runs `parallax <args>` with stderr to dir/err.txt; requires one line naming the missing CUDA
// device and exit code 2.
void require_no_device_error(const std::filesystem::path& dir, const std::string& args) {
  const std::string err = (dir / "err.txt").string();
  const int rc = std::system((std::string(PARALLAX_BIN) + " " + args + " > /dev/null 2> " + err).c_str());
  std::ifstream in(err);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  INFO(text);
  CHECK(WIFEXITED(rc));
  CHECK(WEXITSTATUS(rc) == 2);
  CHECK(std::count(text.begin(), text.end(), '\n') == 1);
  CHECK(text.find("--backend cuda: no CUDA device") != std::string::npos);
}

}  // namespace

TEST_CASE("cuBLAS and NCCL load through the real loader without a device", "[cuda][host]") {
  // dlopen and symbol resolution need no GPU: a missing library or a renamed symbol shows here,
  // not on the first GPU machine.
  const cu::BlasApi& a = cu::blas_api();
  CHECK(a.create != nullptr);
  CHECK(a.gemm_ex != nullptr);
  CHECK(a.gemm_strided_batched_ex != nullptr);
  // A call into the library: its own words for two statuses, different and not empty.
  const std::string ok = a.status_string(CUBLAS_STATUS_SUCCESS);
  const std::string uninit = a.status_string(CUBLAS_STATUS_NOT_INITIALIZED);
  CHECK_FALSE(ok.empty());
  CHECK_FALSE(uninit.empty());
  CHECK(ok != uninit);
  // The NCCL the binary loads is the one its headers describe.
  int version = 0;
  REQUIRE(ncclGetVersion(&version) == ncclSuccess);
  CHECK(version == NCCL_VERSION_CODE);
}

TEST_CASE("the CUDA backend asks for eager module loading unless the user chose", "[cuda][host]") {
  const char* before = std::getenv("CUDA_MODULE_LOADING");
  const std::string saved = before ? before : "";
  unsetenv("CUDA_MODULE_LOADING");
  CHECK(cu::request_eager_module_loading() == "EAGER");
  REQUIRE(std::getenv("CUDA_MODULE_LOADING") != nullptr);
  CHECK(std::string(std::getenv("CUDA_MODULE_LOADING")) == "EAGER");
  setenv("CUDA_MODULE_LOADING", "LAZY", 1);
  CHECK(cu::request_eager_module_loading() == "LAZY");  // the user's choice stays (run warns)
  CHECK(std::string(std::getenv("CUDA_MODULE_LOADING")) == "LAZY");
  if (before) setenv("CUDA_MODULE_LOADING", saved.c_str(), 1);
  else unsetenv("CUDA_MODULE_LOADING");
}

TEST_CASE("no device: the driver's reason in words a user can act on", "[cuda][host]") {
  // A host driver of CUDA 12.4 (R550) under this build's CUDA 13.0 runtime: the runtime says
  // cudaErrorInsufficientDriver; CUDA 13 needs R580 (CUDA Toolkit release notes, Table 3).
  const std::string old = cu::no_device_reason(true, 12040, 13000, "cudaErrorInsufficientDriver: x");
  CHECK(old.find("the NVIDIA driver supports CUDA 12.4, older than this build's CUDA runtime 13.0") !=
        std::string::npos);
  CHECK(old.find("CUDA 13 needs driver R580 or newer") != std::string::npos);
  CHECK(old.find("cudaErrorInsufficientDriver") != std::string::npos);
  // No libcuda at all (this machine): the runtime says the same error, the driver version is 0.
  CHECK(cu::no_device_reason(true, 0, 13000, "cudaErrorInsufficientDriver: x") ==
        "no NVIDIA driver is loaded (cudaErrorInsufficientDriver: x)");
  // A driver and no device: the runtime's own words.
  CHECK(cu::no_device_reason(false, 13000, 13000, "cudaErrorNoDevice: no CUDA-capable device is detected") ==
        "cudaErrorNoDevice: no CUDA-capable device is detected");
}

TEST_CASE("parallax run --backend cuda without a device: one line, exit code 2", "[cuda][host]") {
  std::string why;
  const int devices = cu::device_count(&why);
  if (devices > 0) {
    // This machine has a GPU: the gpu-labelled tests (scripts/test-gpu) run the backend.
    SUCCEED("found " << devices << " CUDA devices; the no-device path is not reachable here");
    return;
  }
  const auto dir = std::filesystem::temp_directory_path() / ("parallax_nocuda_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string plan = (dir / "plan.json").string();
  REQUIRE(std::system((std::string(PARALLAX_BIN) +
                       " predict --model gpt-tiny --cluster dgx-a100-superpod --gpus 1 --tp 1 --pp 1"
                       " --global-batch 4 --mbs 1 --out " + plan + " > /dev/null").c_str()) == 0);
  require_no_device_error(dir, "run --backend cuda --plan " + plan);
  std::filesystem::remove_all(dir);
}

TEST_CASE("parallax calibrate --backend cuda without a device: one line, exit code 2, no profile",
          "[cuda][host]") {
  std::string why;
  if (cu::device_count(&why) > 0) {
    SUCCEED("this machine has CUDA devices; the gpu-labelled calibrate test runs the sweep");
    return;
  }
  const auto dir = std::filesystem::temp_directory_path() / ("parallax_nocuda_cal_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string out = (dir / "profile.json").string();
  // Without --cluster too: the missing device is what is reported first.
  require_no_device_error(dir, "calibrate --backend cuda --out " + out);
  CHECK(!std::filesystem::exists(out));
  std::filesystem::remove_all(dir);
}

TEST_CASE("column reductions launch enough blocks to fill an H100 and cover every element once",
          "[cuda][host]") {
  // The old kernels launched one thread per column: ceil(C / 256) blocks, 16 at C = 4096 for
  // the 132 SMs of an H100 (a handful doing all the work).
  const auto big = cu::column_reduction_geometry(8192, 4096);
  CHECK(big.column_tiles == 4096 / 32);
  CHECK(big.row_chunks == 8192 / 256);
  CHECK(big.blocks() >= 8 * 132);
  CHECK(big.partial_floats(4096, 2) == 32 * 4096 * 2);
  for (const auto& [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{
           {1, 1}, {37, 200}, {256, 32}, {257, 33}, {1000, 70}, {8192, 4096}, {65536, 12288}}) {
    INFO(rows << " x " << cols);
    const auto geo = cu::column_reduction_geometry(rows, cols);
    // Tiles and chunks cover the matrix with no tile or chunk left empty.
    CHECK(geo.column_tiles * cu::kColumnsPerTile >= cols);
    CHECK((geo.column_tiles - 1) * cu::kColumnsPerTile < cols);
    CHECK(geo.row_chunks * cu::kRowsPerChunk >= rows);
    CHECK((geo.row_chunks - 1) * cu::kRowsPerChunk < rows);
    CHECK(geo.row_chunks <= 65535);  // CUDA's grid y
  }
  // The sum of squares: a fixed number of blocks for a given n (so a fixed order), at most 1024.
  CHECK(cu::sum_squares_blocks(1) == 1);
  CHECK(cu::sum_squares_blocks(5000) == 3);  // ceil(5000 / (256 * 8))
  CHECK(cu::sum_squares_blocks(int64_t{1} << 30) == 1024);
}

TEST_CASE("no CUDA kernel uses atomics: the same bits on every run and every TP rank", "[cuda][host]") {
  // TP replicas stay replicas only if every kernel writing their gradients is deterministic
  // (executor/include/parallax/executor/replica_check.hpp); float atomics add in arrival order.
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(PARALLAX_CUDA_SRC)) {
    const auto ext = entry.path().extension();
    if (ext != ".cu" && ext != ".cuh") continue;
    ++files;
    std::ifstream in(entry.path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    INFO(entry.path().string());
    // atomicAdd, atomicCAS, ..., cuda::atomic_ref, std::atomic (comments may say "atomics").
    CHECK_FALSE(std::regex_search(text, std::regex("atomic[A-Z_]|atomic_ref|std::atomic|cuda::atomic")));
  }
  CHECK(files >= 5);
}
