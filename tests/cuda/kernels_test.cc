// GPU tests of the CUDA block kernels (executor/cuda/attention_kernels.h) against the double
// precision reference (executor/kernels/reference.h) computed on the inputs rounded to bf16/fp16.
//
// Every test skips itself when no CUDA device is usable (no GPU or no driver), so the suite passes
// on CPU-only machines; the tensor-core tests also skip on devices below sm_80.
//
// Error metric: max |x - ref| / max |ref| over a whole output tensor. Tolerances:
//   tensor cores, bf16: 2e-2. The inputs are exact in the reference, but P (forward, backward) and
//     dS (backward) are rounded to bf16 (8 significant bits, relative error up to 2^-9) to be the
//     operands of the second GEMM; over ~100-200 keys these errors partly cancel, the worst output
//     element stays well below 1e-2 of the largest.
//   tensor cores, fp16: 5e-3. The same roundings with 11 significant bits (2^-12): ~8x smaller.
//   SIMT (fp32 throughout): 5e-4. Only fp32 accumulation over <= 200 terms and expf/logf ulps
//     remain (~1e-5); any indexing or masking bug produces O(1) errors.
//   LSE (both paths): 1e-3. S is an fp32 sum of exact products and l an fp32 sum of fp32 P, so
//     the LSE is accurate to ~1e-5 whatever the input type.
//   delta (LaunchDelta): 1e-4: an fp32 dot product of d <= 256 terms.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "core/sequence/mask.h"
#include "core/workload/workload.h"
#include "executor/cuda/attention_kernels.h"
#include "executor/cuda/kernels/internal.h"
#include "executor/io/tensor.h"
#include "executor/kernels/reference.h"

namespace meshplan::exec::cuda {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// ---- Device availability ----

// Empty when a CUDA device is usable, otherwise why not.
std::string NoDeviceReason() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return std::string("no usable CUDA device (cudaGetDeviceCount: ") + cudaGetErrorString(err) +
           ")";
  }
  if (count == 0) return "no CUDA device";
  return "";
}

class CudaKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = NoDeviceReason();
    if (!why.empty()) GTEST_SKIP() << why;
  }
};

#define CUDA_ASSERT_OK(expr)                                                                     \
  do {                                                                                           \
    const cudaError_t meshplan_err_ = (expr);                                                    \
    ASSERT_EQ(meshplan_err_, cudaSuccess) << #expr << ": " << cudaGetErrorString(meshplan_err_); \
  } while (0)

// ---- Device memory ----

struct CudaFree {
  void operator()(void* p) const { cudaFree(p); }
};

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    void* p = nullptr;
    if (cudaMalloc(&p, bytes == 0 ? 1 : bytes) == cudaSuccess) ptr_.reset(p);
  }
  void* get() const { return ptr_.get(); }
  size_t bytes() const { return bytes_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_.get());
  }

 private:
  std::unique_ptr<void, CudaFree> ptr_;
  size_t bytes_ = 0;
};

template <typename T>
DeviceBuffer Upload(const std::vector<T>& host) {
  DeviceBuffer buf(host.size() * sizeof(T));
  if (buf.get() != nullptr && !host.empty()) {
    cudaMemcpy(buf.get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
  }
  return buf;
}

template <typename T>
std::vector<T> Download(const DeviceBuffer& buf, size_t count) {
  std::vector<T> host(count);
  if (count > 0) cudaMemcpy(host.data(), buf.get(), count * sizeof(T), cudaMemcpyDeviceToHost);
  return host;
}

// ---- 16-bit inputs ----

uint16_t ToBits(double x, InputType type) {
  if (type == InputType::kBf16) {
    const __nv_bfloat16_raw raw = __float2bfloat16(static_cast<float>(x));
    return raw.x;
  }
  const __half_raw raw = __float2half(static_cast<float>(x));
  return raw.x;
}

double FromBits(uint16_t bits, InputType type) {
  if (type == InputType::kBf16) {
    __nv_bfloat16_raw raw;
    raw.x = bits;
    return __bfloat162float(__nv_bfloat16(raw));
  }
  __half_raw raw;
  raw.x = bits;
  return __half2float(__half(raw));
}

// x rounded to the input type (the value the kernels see).
double RoundTo(double x, InputType type) { return FromBits(ToBits(x, type), type); }

void RoundTensor(TensorD& t, InputType type) {
  for (double& x : t.data) x = RoundTo(x, type);
}

std::vector<uint16_t> ToBits(const std::vector<double>& v, InputType type) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = ToBits(v[i], type);
  return out;
}

std::vector<float> ToFloat(const std::vector<double>& v) {
  return std::vector<float>(v.begin(), v.end());
}

// Rows `pos` (global positions) and heads [h0, h0 + hn) of a global tensor, as a contiguous
// [batch][pos.size()][hn][dim] block.
std::vector<double> Gather(const TensorD& t, const std::vector<int64_t>& pos, int64_t h0,
                           int64_t hn) {
  const int64_t n = static_cast<int64_t>(pos.size());
  std::vector<double> out(static_cast<size_t>(t.batch * n * hn * t.dim));
  for (int64_t b = 0; b < t.batch; ++b) {
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t h = 0; h < hn; ++h) {
        for (int64_t e = 0; e < t.dim; ++e) {
          out[static_cast<size_t>(((b * n + i) * hn + h) * t.dim + e)] =
              t.at(b, pos[static_cast<size_t>(i)], h0 + h, e);
        }
      }
    }
  }
  return out;
}

// max |got - want| / max |want|; infinite when got has a NaN, or an infinity where want has none
// (or the reverse). Infinite entries of `want` must be matched exactly and are left out.
double RelError(const std::vector<float>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) return kInf;
  double max_err = 0, max_ref = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want[i];
    if (std::isnan(g)) return kInf;
    if (std::isinf(w) || std::isinf(g)) {
      if (g != w) return kInf;
      continue;
    }
    max_err = std::max(max_err, std::abs(g - w));
    max_ref = std::max(max_ref, std::abs(w));
  }
  if (max_ref == 0) return max_err;
  return max_err / max_ref;
}

const char* PathName(KernelPath path) {
  switch (path) {
    case KernelPath::kAuto:
      return "auto";
    case KernelPath::kTensorCore:
      return "tensor_core";
    case KernelPath::kSimt:
      return "simt";
    case KernelPath::kCudnn:
      return "cudnn";
  }
  return "?";
}

// ---- A whole attention problem run block by block ----

struct Case {
  std::string name;
  InputType type = InputType::kBf16;
  int32_t dim = 128;
  int64_t batch = 2;
  int64_t seq = 177;
  int64_t q_heads = 8;
  int64_t kv_heads = 2;
  Mask mask = Mask::Causal();
  // Heads held by the views (whole KV groups): query heads [view_q0, view_q0 + view_qn).
  int64_t view_q0 = 0;
  int64_t view_qn = 8;
  // Launches per block pair: query-head ranges [first, second) covering the view's heads.
  std::vector<std::pair<int32_t, int32_t>> head_ranges = {{0, 3}, {3, 8}};
};

// Splits [0, seq) into two blocks of rows: A = [s - a, s) followed by [0, a) (two chunks, not
// monotone: zigzag-like) and B = [a, s - a), with a = 50 for seq 177: 100 and 77 rows, so that
// every tile loop sees partial tiles.
std::vector<std::vector<int64_t>> SplitRows(int64_t seq) {
  const int64_t a = seq * 50 / 177;
  std::vector<int64_t> first, second;
  for (int64_t t = seq - a; t < seq; ++t) first.push_back(t);
  for (int64_t t = 0; t < a; ++t) first.push_back(t);
  for (int64_t t = a; t < seq - a; ++t) second.push_back(t);
  return {first, second};
}

struct Outputs {
  std::vector<std::vector<float>> o, lse, dq, delta;  // per query block
  std::vector<std::vector<float>> dk, dv;             // per key block
};

class Problem {
 public:
  explicit Problem(const Case& c) : c_(c) {
    w_.batch = c.batch;
    w_.seq_len = c.seq;
    w_.q_heads = c.q_heads;
    w_.kv_heads = c.kv_heads;
    w_.head_dim = c.dim;
    w_.mask = c.mask;
    t_ = RandomInputs(w_, 1234);
    RoundTensor(t_.q, c.type);
    RoundTensor(t_.k, c.type);
    RoundTensor(t_.v, c.type);
    RoundTensor(t_.d_o, c.type);
    ReferenceForward(w_, t_);
    ReferenceBackward(w_, t_);
    blocks_ = SplitRows(c.seq);
    group_ = c.q_heads / c.kv_heads;
    view_k0_ = c.view_q0 / group_;
    view_kn_ = c.view_qn / group_;
  }

  const Workload& workload() const { return w_; }
  const AttentionTensors<double>& ref() const { return t_; }
  const std::vector<std::vector<int64_t>>& blocks() const { return blocks_; }
  int64_t view_q0() const { return c_.view_q0; }
  int64_t view_qn() const { return c_.view_qn; }
  int64_t view_k0() const { return view_k0_; }
  int64_t view_kn() const { return view_kn_; }

  // Runs forward (from a NaN-poisoned o with lse = -inf) and backward (from the reference O and
  // LSE, delta by LaunchDelta) block by block with `path`; fills `out`.
  void Run(KernelPath path, Outputs& out) {
    const InputType type = c_.type;
    const int64_t B = c_.batch, d = c_.dim;
    const size_t nb = blocks_.size();
    DeviceMask dmask;
    dmask.params = c_.mask.Params();
    std::vector<int64_t> starts;
    int64_t start = 0;
    for (int64_t len : c_.mask.document_lengths) {
      starts.push_back(start);
      start += len;
    }
    DeviceBuffer doc_starts = Upload(starts);
    if (!starts.empty()) {
      dmask.doc_starts = doc_starts.as<const int64_t>();
      dmask.num_docs = static_cast<int32_t>(starts.size());
    }

    // Per-block device tensors.
    std::vector<DeviceBuffer> pos(nb), q(nb), k(nb), v(nb), d_o(nb), o(nb), lse(nb), o_ref(nb),
        lse_ref(nb), delta(nb), dq(nb), dk(nb), dv(nb);
    std::vector<int64_t> rows(nb);
    for (size_t i = 0; i < nb; ++i) {
      const std::vector<int64_t>& r = blocks_[i];
      rows[i] = static_cast<int64_t>(r.size());
      pos[i] = Upload(r);
      q[i] = Upload(ToBits(Gather(t_.q, r, c_.view_q0, c_.view_qn), type));
      d_o[i] = Upload(ToBits(Gather(t_.d_o, r, c_.view_q0, c_.view_qn), type));
      k[i] = Upload(ToBits(Gather(t_.k, r, view_k0_, view_kn_), type));
      v[i] = Upload(ToBits(Gather(t_.v, r, view_k0_, view_kn_), type));
      o_ref[i] = Upload(ToFloat(Gather(t_.o, r, c_.view_q0, c_.view_qn)));
      lse_ref[i] = Upload(ToFloat(Gather(t_.lse, r, c_.view_q0, c_.view_qn)));
      const int64_t q_elems = B * rows[i] * c_.view_qn * d;
      const int64_t q_rows = B * rows[i] * c_.view_qn;
      const int64_t k_elems = B * rows[i] * view_kn_ * d;
      o[i] = DeviceBuffer(q_elems * 4);
      lse[i] = DeviceBuffer(q_rows * 4);
      delta[i] = DeviceBuffer(q_rows * 4);
      dq[i] = DeviceBuffer(q_elems * 4);
      dk[i] = DeviceBuffer(k_elems * 4);
      dv[i] = DeviceBuffer(k_elems * 4);
      for (const DeviceBuffer* buf : {&pos[i], &q[i], &d_o[i], &k[i], &v[i], &o_ref[i], &lse_ref[i],
                                      &o[i], &lse[i], &delta[i], &dq[i], &dk[i], &dv[i]}) {
        ASSERT_NE(buf->get(), nullptr) << "cudaMalloc failed";
      }
      // Outputs that must be fully written start as NaN; accumulators as empty.
      CUDA_ASSERT_OK(LaunchFill(o[i].as<float>(), kNaN, q_elems, nullptr));
      CUDA_ASSERT_OK(
          LaunchFill(lse[i].as<float>(), -std::numeric_limits<float>::infinity(), q_rows, nullptr));
      CUDA_ASSERT_OK(LaunchFill(delta[i].as<float>(), kNaN, q_rows, nullptr));
      CUDA_ASSERT_OK(LaunchFill(dq[i].as<float>(), 0.0f, q_elems, nullptr));
      CUDA_ASSERT_OK(LaunchFill(dk[i].as<float>(), 0.0f, k_elems, nullptr));
      CUDA_ASSERT_OK(LaunchFill(dv[i].as<float>(), 0.0f, k_elems, nullptr));
    }
    auto qview = [&](const DeviceBuffer& buf, size_t i, bool with_pos) {
      return TensorView{buf.get(), rows[i], static_cast<int32_t>(c_.view_q0),
                        static_cast<int32_t>(c_.view_qn),
                        with_pos ? pos[i].as<const int64_t>() : nullptr};
    };
    auto kview = [&](const DeviceBuffer& buf, size_t j, bool with_pos) {
      return TensorView{buf.get(), rows[j], static_cast<int32_t>(view_k0_),
                        static_cast<int32_t>(view_kn_),
                        with_pos ? pos[j].as<const int64_t>() : nullptr};
    };
    auto problem = [&](int32_t h0, int32_t h1) {
      BlockProblem p;
      p.type = type;
      p.batch = B;
      p.dim = c_.dim;
      p.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c_.dim)));
      p.head_begin = h0;
      p.head_count = h1 - h0;
      p.group_size = static_cast<int32_t>(group_);
      p.mask = dmask;
      return p;
    };

    for (size_t i = 0; i < nb; ++i) {
      // delta = rowsum(dO * O) over the reference O, as the executor does after the forward.
      CUDA_ASSERT_OK(LaunchDelta(type, o_ref[i].as<float>(), d_o[i].get(), delta[i].as<float>(), B,
                                 rows[i], static_cast<int32_t>(c_.view_qn), c_.dim, nullptr));
      for (size_t j = 0; j < nb; ++j) {
        for (const auto& [h0, h1] : c_.head_ranges) {
          const BlockProblem p = problem(h0, h1);
          CUDA_ASSERT_OK(LaunchBlockForward(p, qview(q[i], i, true), kview(k[j], j, true),
                                            kview(v[j], j, false), qview(o[i], i, false),
                                            qview(lse[i], i, false), path, nullptr));
          CUDA_ASSERT_OK(LaunchBlockBackward(p, qview(q[i], i, true), kview(k[j], j, true),
                                             kview(v[j], j, false), qview(d_o[i], i, false),
                                             qview(lse_ref[i], i, false), qview(delta[i], i, false),
                                             qview(dq[i], i, false), kview(dk[j], j, false),
                                             kview(dv[j], j, false), path, nullptr));
        }
      }
    }
    CUDA_ASSERT_OK(cudaDeviceSynchronize());
    out = Outputs{};
    for (size_t i = 0; i < nb; ++i) {
      const size_t q_elems = static_cast<size_t>(B * rows[i] * c_.view_qn * d);
      const size_t q_rows = static_cast<size_t>(B * rows[i] * c_.view_qn);
      const size_t k_elems = static_cast<size_t>(B * rows[i] * view_kn_ * d);
      out.o.push_back(Download<float>(o[i], q_elems));
      out.lse.push_back(Download<float>(lse[i], q_rows));
      out.delta.push_back(Download<float>(delta[i], q_rows));
      out.dq.push_back(Download<float>(dq[i], q_elems));
      out.dk.push_back(Download<float>(dk[i], k_elems));
      out.dv.push_back(Download<float>(dv[i], k_elems));
    }
    CUDA_ASSERT_OK(cudaGetLastError());
  }

  // Expected delta of block i: rowsum(dO * float(O_ref)) in double.
  std::vector<double> ExpectedDelta(size_t i) const {
    const std::vector<double> o = Gather(t_.o, blocks_[i], c_.view_q0, c_.view_qn);
    const std::vector<double> d_o = Gather(t_.d_o, blocks_[i], c_.view_q0, c_.view_qn);
    const size_t d = static_cast<size_t>(c_.dim);
    std::vector<double> out(o.size() / d);
    for (size_t r = 0; r < out.size(); ++r) {
      double s = 0;
      for (size_t e = 0; e < d; ++e)
        s += static_cast<double>(static_cast<float>(o[r * d + e])) * d_o[r * d + e];
      out[r] = s;
    }
    return out;
  }

 private:
  Case c_;
  Workload w_;
  AttentionTensors<double> t_;
  std::vector<std::vector<int64_t>> blocks_;
  int64_t group_ = 1, view_k0_ = 0, view_kn_ = 1;
};

double OutputTolerance(KernelPath path, InputType type) {
  if (path == KernelPath::kSimt) return 5e-4;
  return type == InputType::kBf16 ? 2e-2 : 5e-3;
}

// Compares every output of `out` with the reference.
void ExpectMatchesReference(const Problem& pr, const Outputs& out, double tol,
                            const std::string& what) {
  const AttentionTensors<double>& t = pr.ref();
  for (size_t i = 0; i < pr.blocks().size(); ++i) {
    const std::vector<int64_t>& r = pr.blocks()[i];
    const std::string at = what + " block " + std::to_string(i);
    EXPECT_LT(RelError(out.o[i], Gather(t.o, r, pr.view_q0(), pr.view_qn())), tol) << at << ": O";
    EXPECT_LT(RelError(out.lse[i], Gather(t.lse, r, pr.view_q0(), pr.view_qn())), 1e-3)
        << at << ": LSE";
    EXPECT_LT(RelError(out.delta[i], pr.ExpectedDelta(i)), 1e-4) << at << ": delta";
    EXPECT_LT(RelError(out.dq[i], Gather(t.dq, r, pr.view_q0(), pr.view_qn())), tol)
        << at << ": dQ";
    EXPECT_LT(RelError(out.dk[i], Gather(t.dk, r, pr.view_k0(), pr.view_kn())), tol)
        << at << ": dK";
    EXPECT_LT(RelError(out.dv[i], Gather(t.dv, r, pr.view_k0(), pr.view_kn())), tol)
        << at << ": dV";
  }
}

Case MakeCase(std::string name, InputType type, int32_t dim, Mask mask) {
  Case c;
  c.name = std::move(name);
  c.type = type;
  c.dim = dim;
  c.mask = std::move(mask);
  return c;
}

std::vector<Case> Cases() {
  const Mask docs = Mask::Documents({30, 1, 70, 76});  // sums to 177
  std::vector<Case> cases = {
      MakeCase("bf16_d128_causal", InputType::kBf16, 128, Mask::Causal()),
      MakeCase("bf16_d64_full", InputType::kBf16, 64, Mask::Full()),
      MakeCase("bf16_d64_window", InputType::kBf16, 64, Mask::Window(40)),
      MakeCase("bf16_d128_docs", InputType::kBf16, 128, docs),
      MakeCase("fp16_d128_window", InputType::kFp16, 128, Mask::Window(40)),
      MakeCase("fp16_d64_docs", InputType::kFp16, 64, docs),
      MakeCase("fp16_d128_full", InputType::kFp16, 128, Mask::Full()),
      MakeCase("fp16_d64_causal", InputType::kFp16, 64, Mask::Causal()),
      // Bidirectional documents and a prefix-LM mask: keys after the query are visible, so a
      // tile above the diagonal is not skipped (ClassifyTile kinds 4 and 5).
      MakeCase("bf16_d128_docs_full", InputType::kBf16, 128,
               Mask::Documents({30, 1, 70, 76}, true)),
      MakeCase("fp16_d64_prefix", InputType::kFp16, 64, Mask::Prefix(60)),
  };
  // Views holding a head slice: query heads [4, 8) (KV head 1), one launch for all of them.
  Case slice = MakeCase("bf16_d128_causal_head_slice", InputType::kBf16, 128, Mask::Causal());
  slice.view_q0 = 4;
  slice.view_qn = 4;
  slice.head_ranges = {{4, 8}};
  cases.push_back(slice);
  // No GQA (group 1), one head per launch.
  Case mha = MakeCase("bf16_d64_causal_mha", InputType::kBf16, 64, Mask::Causal());
  mha.q_heads = 3;
  mha.kv_heads = 3;
  mha.view_qn = 3;
  mha.head_ranges = {{0, 1}, {1, 2}, {2, 3}};
  cases.push_back(mha);
  return cases;
}

struct PathCase {
  Case c;
  KernelPath path;
};

// Test names and messages show the case, not its bytes.
void PrintTo(const PathCase& pc, std::ostream* os) {
  *os << pc.c.name << " (" << PathName(pc.path) << ")";
}

std::vector<PathCase> PathCases() {
  std::vector<PathCase> out;
  for (const Case& c : Cases()) {
    out.push_back({c, KernelPath::kTensorCore});
    out.push_back({c, KernelPath::kSimt});
  }
  // Head dims only the SIMT path supports.
  out.push_back(
      {MakeCase("bf16_d40_causal", InputType::kBf16, 40, Mask::Causal()), KernelPath::kSimt});
  out.push_back(
      {MakeCase("fp16_d256_window", InputType::kFp16, 256, Mask::Window(40)), KernelPath::kSimt});
  out.push_back({MakeCase("bf16_d96_docs", InputType::kBf16, 96, Mask::Documents({30, 1, 70, 76})),
                 KernelPath::kSimt});
  return out;
}

class BlockKernel : public ::testing::TestWithParam<PathCase> {
 protected:
  void SetUp() override {
    const std::string why = NoDeviceReason();
    if (!why.empty()) GTEST_SKIP() << why;
  }
};

TEST_P(BlockKernel, MatchesReference) {
  const PathCase& pc = GetParam();
  if (pc.path == KernelPath::kTensorCore) {
    BlockProblem p;
    p.type = pc.c.type;
    p.dim = pc.c.dim;
    if (!TensorCorePathSupports(p))
      GTEST_SKIP() << "tensor-core path unsupported on this device (needs sm_80+)";
  }
  Problem pr(pc.c);
  Outputs out;
  ASSERT_NO_FATAL_FAILURE(pr.Run(pc.path, out));
  ExpectMatchesReference(pr, out, OutputTolerance(pc.path, pc.c.type), PathName(pc.path));
}

INSTANTIATE_TEST_SUITE_P(Cases, BlockKernel, ::testing::ValuesIn(PathCases()),
                         [](const ::testing::TestParamInfo<PathCase>& info) {
                           // "tensor", not PathName's "tensor_core": ctest's names fit 72
                           // characters (tests/meta/ctest_names_fit.sh).
                           const bool tensor = info.param.path == KernelPath::kTensorCore;
                           return info.param.c.name + "_" +
                                  (tensor ? "tensor" : PathName(info.param.path));
                         });

// The two kernel families on the same inputs agree (the tensor-core path's bf16 rounding bound).
TEST_F(CudaKernelTest, TensorCoreAgreesWithSimt) {
  Case c = MakeCase("agree", InputType::kBf16, 128, Mask::Causal());
  BlockProblem probe;
  probe.type = c.type;
  probe.dim = c.dim;
  if (!TensorCorePathSupports(probe))
    GTEST_SKIP() << "tensor-core path unsupported on this device (needs sm_80+)";
  Problem pr(c);
  Outputs tc, simt;
  ASSERT_NO_FATAL_FAILURE(pr.Run(KernelPath::kTensorCore, tc));
  ASSERT_NO_FATAL_FAILURE(pr.Run(KernelPath::kSimt, simt));
  auto as_double = [](const std::vector<float>& v) {
    return std::vector<double>(v.begin(), v.end());
  };
  for (size_t i = 0; i < tc.o.size(); ++i) {
    EXPECT_LT(RelError(tc.o[i], as_double(simt.o[i])), 2e-2) << "O block " << i;
    EXPECT_LT(RelError(tc.lse[i], as_double(simt.lse[i])), 1e-3) << "LSE block " << i;
    EXPECT_LT(RelError(tc.dq[i], as_double(simt.dq[i])), 2e-2) << "dQ block " << i;
    EXPECT_LT(RelError(tc.dk[i], as_double(simt.dk[i])), 2e-2) << "dK block " << i;
    EXPECT_LT(RelError(tc.dv[i], as_double(simt.dv[i])), 2e-2) << "dV block " << i;
  }
}

// The tensor-core backward with its query-head split forced (the automatic choice depends on the
// SM count and, on a large GPU, gives one head per CTA for these small blocks): 1 is the whole
// computed part of the group per CTA with plain dK/dV adds; 2 splits the 3-head launch [0, 3)
// into chunks of 1 and 2 heads and the 4 heads of KV head 1 into 2 + 2, with atomics; 3 and 5
// leave some chunks empty (the 1-head KV head 0 of launch [3, 8), and 5 > any group).
TEST_F(CudaKernelTest, BackwardHeadSplitsMatchReference) {
  struct Restore {
    ~Restore() { kern::SetTcBackwardHeadSplitForTesting(0); }
  } restore;
  for (const Case& c :
       {MakeCase("split_bf16_d128_causal", InputType::kBf16, 128, Mask::Causal()),
        MakeCase("split_fp16_d64_docs", InputType::kFp16, 64, Mask::Documents({30, 1, 70, 76}))}) {
    BlockProblem probe;
    probe.type = c.type;
    probe.dim = c.dim;
    if (!TensorCorePathSupports(probe))
      GTEST_SKIP() << "tensor-core path unsupported on this device (needs sm_80+)";
    Problem pr(c);
    for (const int split : {1, 2, 3, 5}) {
      kern::SetTcBackwardHeadSplitForTesting(split);
      Outputs out;
      ASSERT_NO_FATAL_FAILURE(pr.Run(KernelPath::kTensorCore, out));
      ExpectMatchesReference(pr, out, OutputTolerance(KernelPath::kTensorCore, c.type),
                             c.name + " split " + std::to_string(split));
    }
  }
}

// kAuto runs (the tensor cores where supported, SIMT otherwise) and matches the reference.
TEST_F(CudaKernelTest, AutoPathMatchesReference) {
  Problem pr(MakeCase("auto", InputType::kBf16, 64, Mask::Causal()));
  Outputs out;
  ASSERT_NO_FATAL_FAILURE(pr.Run(KernelPath::kAuto, out));
  ExpectMatchesReference(pr, out, OutputTolerance(KernelPath::kTensorCore, InputType::kBf16),
                         "auto");
}

// A block the mask hides entirely (causal: every key after every query) leaves the accumulators
// untouched on both paths. (Rows that see nothing in one block among visible rows are covered by
// the window cases of MatchesReference.)
TEST_F(CudaKernelTest, InvisibleBlockIsANoOp) {
  constexpr int64_t kRows = 70;
  constexpr int32_t kDim = 64;
  std::vector<int64_t> q_pos(kRows), k_pos(kRows);
  for (int64_t i = 0; i < kRows; ++i) {
    q_pos[static_cast<size_t>(i)] = i;
    k_pos[static_cast<size_t>(i)] = 100 + i;
  }
  std::mt19937 gen(7);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> x(kRows * kDim);
  for (double& e : x) e = dist(gen);
  DeviceBuffer qp = Upload(q_pos), kp = Upload(k_pos);
  DeviceBuffer in = Upload(ToBits(x, InputType::kBf16));
  DeviceBuffer o(kRows * kDim * 4), lse(kRows * 4), dq(kRows * kDim * 4), dk(kRows * kDim * 4),
      dv(kRows * kDim * 4), lse_in(kRows * 4), delta(kRows * 4);
  for (KernelPath path : {KernelPath::kTensorCore, KernelPath::kSimt}) {
    BlockProblem p;
    p.type = InputType::kBf16;
    p.dim = kDim;
    p.scale = 0.125f;
    p.head_count = 1;
    p.mask.params.kind = MaskKind::kCausal;
    if (path == KernelPath::kTensorCore && !TensorCorePathSupports(p)) continue;
    CUDA_ASSERT_OK(LaunchFill(o.as<float>(), 7.0f, kRows * kDim, nullptr));
    CUDA_ASSERT_OK(LaunchFill(lse.as<float>(), 1.5f, kRows, nullptr));
    CUDA_ASSERT_OK(LaunchFill(lse_in.as<float>(), 0.5f, kRows, nullptr));
    CUDA_ASSERT_OK(LaunchFill(delta.as<float>(), 0.25f, kRows, nullptr));
    for (DeviceBuffer* g : {&dq, &dk, &dv})
      CUDA_ASSERT_OK(LaunchFill(g->as<float>(), 0.0f, kRows * kDim, nullptr));
    const TensorView q{in.get(), kRows, 0, 1, qp.as<const int64_t>()};
    const TensorView k{in.get(), kRows, 0, 1, kp.as<const int64_t>()};
    CUDA_ASSERT_OK(LaunchBlockForward(p, q, k, k, {o.get(), kRows, 0, 1, nullptr},
                                      {lse.get(), kRows, 0, 1, nullptr}, path, nullptr));
    CUDA_ASSERT_OK(LaunchBlockBackward(
        p, q, k, k, q, {lse_in.get(), kRows, 0, 1, nullptr}, {delta.get(), kRows, 0, 1, nullptr},
        {dq.get(), kRows, 0, 1, nullptr}, {dk.get(), kRows, 0, 1, nullptr},
        {dv.get(), kRows, 0, 1, nullptr}, path, nullptr));
    CUDA_ASSERT_OK(cudaDeviceSynchronize());
    for (float e : Download<float>(o, kRows * kDim)) ASSERT_EQ(e, 7.0f) << PathName(path);
    for (float e : Download<float>(lse, kRows)) ASSERT_EQ(e, 1.5f) << PathName(path);
    for (const DeviceBuffer* g : {&dq, &dk, &dv}) {
      for (float e : Download<float>(*g, kRows * kDim)) ASSERT_EQ(e, 0.0f) << PathName(path);
    }
  }
}

// Empty problems enqueue nothing and succeed; bad arguments are refused.
TEST_F(CudaKernelTest, EmptyAndInvalidProblems) {
  BlockProblem p;
  p.dim = 64;
  p.head_count = 1;
  p.scale = 0.125f;
  const TensorView none{};
  EXPECT_EQ(LaunchBlockForward(p, none, none, none, none, none, KernelPath::kAuto, nullptr),
            cudaSuccess);
  EXPECT_EQ(LaunchFill(nullptr, 0.0f, 0, nullptr), cudaSuccess);
  EXPECT_EQ(LaunchAddInto(nullptr, nullptr, 0, nullptr), cudaSuccess);
  DeviceBuffer buf(64 * 64 * 4);
  const TensorView rows{buf.get(), 8, 0, 1, nullptr};
  p.dim = 300;  // beyond every path
  EXPECT_EQ(LaunchBlockForward(p, rows, rows, rows, rows, rows, KernelPath::kSimt, nullptr),
            cudaErrorInvalidValue);
  p.dim = 64;
  p.head_begin = 1;  // not held by the views
  EXPECT_EQ(LaunchBlockForward(p, rows, rows, rows, rows, rows, KernelPath::kSimt, nullptr),
            cudaErrorInvalidValue);
  p.head_begin = 0;
  p.dim = 96;  // not a tensor-core dim
  EXPECT_EQ(LaunchBlockForward(p, rows, rows, rows, rows, rows, KernelPath::kTensorCore, nullptr),
            cudaErrorNotSupported);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// ---- Small kernels ----

TEST_F(CudaKernelTest, MergePartialMatchesLogSumExp) {
  constexpr int64_t kCount = 300;
  constexpr int32_t kDim = 72;
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  const float neg_inf = -std::numeric_limits<float>::infinity();
  std::vector<float> o(kCount * kDim), o_in(kCount * kDim), lse(kCount), lse_in(kCount);
  for (float& x : o) x = dist(gen);
  for (float& x : o_in) x = dist(gen);
  for (int64_t r = 0; r < kCount; ++r) {
    lse[r] = r % 5 == 1 || r % 5 == 3 ? neg_inf : dist(gen);
    lse_in[r] = r % 5 == 2 || r % 5 == 3 ? neg_inf : dist(gen) * (r % 7 == 0 ? 40.0f : 1.0f);
    // An empty accumulator row holds poison: it must be overwritten, never read.
    if (lse[r] == neg_inf) {
      for (int32_t e = 0; e < kDim; ++e) o[r * kDim + e] = kNaN;
    }
  }
  DeviceBuffer d_o = Upload(o), d_lse = Upload(lse), d_o_in = Upload(o_in),
               d_lse_in = Upload(lse_in);
  CUDA_ASSERT_OK(LaunchMergePartial(d_o.as<float>(), d_lse.as<float>(), d_o_in.as<const float>(),
                                    d_lse_in.as<const float>(), kCount, kDim, nullptr));
  CUDA_ASSERT_OK(cudaDeviceSynchronize());
  const std::vector<float> got_o = Download<float>(d_o, o.size()),
                           got_lse = Download<float>(d_lse, lse.size());
  for (int64_t r = 0; r < kCount; ++r) {
    const double a = lse[r], b = lse_in[r];
    double want_lse;
    double wa, wb;
    if (b == -kInf) {
      want_lse = a, wa = 1, wb = 0;
    } else if (a == -kInf) {
      want_lse = b, wa = 0, wb = 1;
    } else {
      const double m = std::max(a, b);
      want_lse = m + std::log(std::exp(a - m) + std::exp(b - m));
      wa = std::exp(a - want_lse);
      wb = std::exp(b - want_lse);
    }
    if (want_lse == -kInf) {
      EXPECT_EQ(got_lse[r], neg_inf) << "row " << r;
      continue;  // both empty: o is left as it was
    }
    EXPECT_NEAR(got_lse[r], want_lse, 1e-5 * std::max(1.0, std::abs(want_lse))) << "row " << r;
    for (int32_t e = 0; e < kDim; ++e) {
      const size_t i = static_cast<size_t>(r * kDim + e);
      const double want = (wa == 0 ? 0.0 : wa * o[i]) + wb * o_in[i];
      ASSERT_NEAR(got_o[i], want, 1e-5) << "row " << r << " element " << e;
    }
  }
}

TEST_F(CudaKernelTest, DeltaIsRowSumOfProducts) {
  for (InputType type : {InputType::kBf16, InputType::kFp16}) {
    constexpr int64_t kBatch = 2, kRows = 37;
    constexpr int32_t kHeads = 3, kDim = 128;
    const int64_t count = kBatch * kRows * kHeads;
    std::mt19937 gen(5);
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    std::vector<double> o(count * kDim), d_o(count * kDim);
    for (double& x : o) x = static_cast<float>(dist(gen));
    for (double& x : d_o) x = RoundTo(dist(gen), type);
    DeviceBuffer dev_o = Upload(ToFloat(o)), dev_do = Upload(ToBits(d_o, type)), delta(count * 4);
    CUDA_ASSERT_OK(LaunchFill(delta.as<float>(), kNaN, count, nullptr));  // must be overwritten
    CUDA_ASSERT_OK(LaunchDelta(type, dev_o.as<const float>(), dev_do.get(), delta.as<float>(),
                               kBatch, kRows, kHeads, kDim, nullptr));
    CUDA_ASSERT_OK(cudaDeviceSynchronize());
    std::vector<double> want(static_cast<size_t>(count));
    for (int64_t r = 0; r < count; ++r) {
      for (int32_t e = 0; e < kDim; ++e) want[r] += o[r * kDim + e] * d_o[r * kDim + e];
    }
    EXPECT_LT(RelError(Download<float>(delta, count), want), 1e-5);
  }
}

TEST_F(CudaKernelTest, AddIntoAndFill) {
  constexpr int64_t kN = 100003;
  std::vector<float> a(kN), b(kN);
  for (int64_t i = 0; i < kN; ++i) {
    a[i] = static_cast<float>(i % 97);
    b[i] = static_cast<float>(i % 13) * 0.5f;
  }
  DeviceBuffer da = Upload(a), db = Upload(b);
  CUDA_ASSERT_OK(LaunchAddInto(da.as<float>(), db.as<const float>(), kN, nullptr));
  CUDA_ASSERT_OK(cudaDeviceSynchronize());
  const std::vector<float> got = Download<float>(da, kN);
  for (int64_t i = 0; i < kN; ++i) ASSERT_EQ(got[i], a[i] + b[i]) << i;
  CUDA_ASSERT_OK(LaunchFill(da.as<float>(), kNaN, kN, nullptr));
  CUDA_ASSERT_OK(cudaDeviceSynchronize());
  for (float x : Download<float>(da, kN)) ASSERT_TRUE(std::isnan(x));
}

// Row copies of 2- and 4-byte elements, with and without a row index array, whole-16-byte and
// element-wise (misaligned base) variants; the destination starts as poison outside and inside
// the copied region and must hold the source inside, the poison outside.
TEST_F(CudaKernelTest, RowCopyCopiesRowsAndHeads) {
  for (int32_t elem : {2, 4}) {
    for (bool indexed : {false, true}) {
      for (int32_t offset : {0, 1}) {  // offset 1: bases not 16-byte aligned
        constexpr int64_t kBatch = 2, kSrcRows = 11, kDstRows = 9, kCount = 5;
        constexpr int32_t kSrcHeads = 4, kDstHeads = 3, kDim = 64, kCopyHeads = 2;
        const int64_t src_n = kBatch * kSrcRows * kSrcHeads * kDim + offset;
        const int64_t dst_n = kBatch * kDstRows * kDstHeads * kDim + offset;
        const std::vector<int64_t> src_rows = {7, 2, 9, 0, 4};
        std::vector<uint8_t> src(static_cast<size_t>(src_n * elem));
        for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>((i * 131 + 7) % 251);
        const std::vector<uint8_t> poison(static_cast<size_t>(dst_n * elem), 0xff);
        DeviceBuffer dsrc = Upload(src), ddst = Upload(poison), drows = Upload(src_rows);
        RowCopy c;
        c.src = dsrc.as<uint8_t>() + offset * elem;
        c.dst = ddst.as<uint8_t>() + offset * elem;
        c.elem_bytes = elem;
        c.batch = kBatch;
        c.dim = kDim;
        c.count = kCount;
        c.src_rows = indexed ? drows.as<const int64_t>() : nullptr;
        c.src_row0 = 3;
        c.src_rows_total = kSrcRows;
        c.dst_row0 = 2;
        c.dst_rows_total = kDstRows;
        c.src_head0 = 1;
        c.src_heads = kSrcHeads;
        c.dst_head0 = 1;
        c.dst_heads = kDstHeads;
        c.copy_heads = kCopyHeads;
        CUDA_ASSERT_OK(LaunchRowCopy(c, nullptr));
        CUDA_ASSERT_OK(cudaDeviceSynchronize());
        std::vector<uint8_t> want = poison;
        const uint8_t* s = src.data() + offset * elem;
        uint8_t* w = want.data() + offset * elem;
        for (int64_t b = 0; b < kBatch; ++b) {
          for (int64_t i = 0; i < kCount; ++i) {
            const int64_t sr = indexed ? src_rows[static_cast<size_t>(i)] : c.src_row0 + i;
            for (int32_t h = 0; h < kCopyHeads; ++h) {
              const int64_t so = ((b * kSrcRows + sr) * kSrcHeads + c.src_head0 + h) * kDim * elem;
              const int64_t d =
                  ((b * kDstRows + c.dst_row0 + i) * kDstHeads + c.dst_head0 + h) * kDim * elem;
              std::memcpy(w + d, s + so, static_cast<size_t>(kDim * elem));
            }
          }
        }
        EXPECT_EQ(Download<uint8_t>(ddst, want.size()), want)
            << "elem " << elem << " indexed " << indexed << " offset " << offset;
      }
    }
  }
}

}  // namespace
}  // namespace meshplan::exec::cuda
