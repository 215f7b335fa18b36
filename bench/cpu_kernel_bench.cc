// CPU block-kernel speed (issue: executor on CPU):
//   the block kernel's GFLOP/s for 512-token blocks with head dim 128 must reach at least 30% of
//   the same machine's Eigen fp32 GEMM rate, measured in the same run.
// All benchmarks are single-threaded. Run pinned to one core:
//   taskset -c 0 ./build/bench/cpu_kernel_bench
//
// FLOP conventions (as in the rest of meshplan, FlashAttention style):
//   GEMM m x n x k:   2 m n k
//   block forward:    4 n_q n_k d   (QK^T and PV; softmax not counted)
//   block backward:   2.5 x forward (QK^T recompute, dV, dP, dQ, dK)
//   causal diagonal:  the same nominal count as the full block (about half the pairs are visible),
//                     reported for information only.
//   useful work:      "useful_GFLOP/s" counts only the visible pairs (the nominal count times the
//                     visible fraction): what the planner's model charges for the block.
//
// The reference GEMM rate ("gemm_ref_gflops") is computed once at startup: the two products the
// forward does, QK^T (512 x 512 x 128) and PV (512 x 128 x 512), on the same row-major Eigen
// maps the kernel uses, timed in thread CPU time, best of several trials, as total flops over
// total time. "fraction_of_gemm" is the kernel's rate divided by that reference.
#include <benchmark/benchmark.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "core/sequence/mask.h"
#include "executor/kernels/block_kernels.h"

namespace meshplan::exec {

double GemmReferenceFlops();

namespace {

constexpr int64_t kN = 512;  // query rows = key rows
constexpr int64_t kD = 128;  // head dim

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstView = Eigen::Map<const RowMajor, 0, Eigen::OuterStride<>>;
using View = Eigen::Map<RowMajor, 0, Eigen::OuterStride<>>;

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

std::vector<float> Random(int64_t count, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> out(static_cast<size_t>(count));
  for (float& x : out) x = dist(gen);
  return out;
}

// Seconds for one a[m x k] * b[k x n] (b given transposed when `b_transposed`), best of trials.
double GemmSeconds(int64_t m, int64_t n, int64_t k, bool b_transposed) {
  const std::vector<float> a = Random(m * k, 1), b = Random(k * n, 2);
  std::vector<float> c(static_cast<size_t>(m * n));
  const ConstView av(a.data(), m, k, Eigen::OuterStride<>(k));
  View cv(c.data(), m, n, Eigen::OuterStride<>(n));
  auto once = [&] {
    if (b_transposed) {
      const ConstView bt(b.data(), n, k, Eigen::OuterStride<>(k));
      cv.noalias() = av * bt.transpose();
    } else {
      const ConstView bv(b.data(), k, n, Eigen::OuterStride<>(n));
      cv.noalias() = av * bv;
    }
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  };
  for (int i = 0; i < 3; ++i) once();  // warm up
  double best = 1e30;
  for (int trial = 0; trial < 7; ++trial) {
    constexpr int kReps = 10;
    const double t0 = ThreadCpuSeconds();
    for (int i = 0; i < kReps; ++i) once();
    best = std::min(best, (ThreadCpuSeconds() - t0) / kReps);
  }
  return best;
}

// Runs `body` as the benchmark loop and reports GFLOP/s (thread CPU time, like the reference), and
// with `with_fraction` the ratio to the reference GEMM rate.
// `visible_fraction` (of the block's pairs) scales the nominal rate into "useful_GFLOP/s".
template <typename Body>
void RunAndReport(benchmark::State& state, double flops_per_iteration, bool with_fraction,
                  Body body, double visible_fraction = 1.0) {
  const double t0 = ThreadCpuSeconds();
  for (auto _ : state) body();
  const double seconds = ThreadCpuSeconds() - t0;
  if (seconds <= 0 || state.iterations() == 0) return;
  const double rate = flops_per_iteration * static_cast<double>(state.iterations()) / seconds;
  state.counters["GFLOP/s"] = rate * 1e-9;
  if (with_fraction) state.counters["useful_GFLOP/s"] = rate * visible_fraction * 1e-9;
  if (with_fraction) {
    state.counters["fraction_of_gemm"] = rate / GemmReferenceFlops();
    state.counters["gemm_ref_GFLOP/s"] = GemmReferenceFlops() * 1e-9;
  }
}

// ---- Eigen GEMM references (same row-major maps as the kernels) ----

void GemmBench(benchmark::State& state, int64_t m, int64_t n, int64_t k, bool b_transposed) {
  const std::vector<float> a = Random(m * k, 1), b = Random(k * n, 2);
  std::vector<float> c(static_cast<size_t>(m * n));
  const ConstView av(a.data(), m, k, Eigen::OuterStride<>(k));
  View cv(c.data(), m, n, Eigen::OuterStride<>(n));
  RunAndReport(state, 2.0 * m * n * k, false, [&] {
    if (b_transposed) {
      const ConstView bt(b.data(), n, k, Eigen::OuterStride<>(k));
      cv.noalias() = av * bt.transpose();
    } else {
      const ConstView bv(b.data(), k, n, Eigen::OuterStride<>(n));
      cv.noalias() = av * bv;
    }
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  });
}

// m x n x k = 512 x 512 x 128: S = Q K^T (B given as K, transposed), as in the forward.
void BM_EigenGemm512x512x128(benchmark::State& state) { GemmBench(state, 512, 512, 128, true); }
// 512 x 128 x 512: O = P V, as in the forward.
void BM_EigenGemm512x128x512(benchmark::State& state) { GemmBench(state, 512, 128, 512, false); }
// A square-ish large product for context (Eigen's best-case shape).
void BM_EigenGemm512x512x512(benchmark::State& state) { GemmBench(state, 512, 512, 512, false); }
BENCHMARK(BM_EigenGemm512x512x128)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_EigenGemm512x128x512)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_EigenGemm512x512x512)->Unit(benchmark::kMicrosecond);

// ---- Block kernels ----

struct BlockData {
  std::vector<float> q = Random(kN * kD, 11), k = Random(kN * kD, 12), v = Random(kN * kD, 13);
  std::vector<float> d_o = Random(kN * kD, 14);
  std::vector<int64_t> positions;
  std::vector<float> o = std::vector<float>(kN * kD), lse = std::vector<float>(kN);
  std::vector<float> delta = std::vector<float>(kN);
  std::vector<float> dq = std::vector<float>(kN * kD), dk = dq, dv = dq;
  float scale = 1.0f / std::sqrt(static_cast<float>(kD));

  BlockData() {
    positions.resize(kN);
    for (int64_t i = 0; i < kN; ++i) positions[i] = i;  // same positions for Q and KV rows
  }
  RowsView Rows(const std::vector<float>& data) const {
    return {data.data(), kN, kD, positions.data()};
  }

  void Forward(const MaskRule& mask) {
    BlockForward(Rows(q), Rows(k), Rows(v), kD, scale, mask, {o.data(), kN, kD}, lse.data());
  }
  // Forward once to get a consistent lse and delta = rowsum(dO * O).
  void PrepareBackward(const MaskRule& mask) {
    Forward(mask);
    for (int64_t i = 0; i < kN; ++i) {
      float sum = 0;
      for (int64_t j = 0; j < kD; ++j) sum += d_o[i * kD + j] * o[i * kD + j];
      delta[i] = sum;
    }
  }
  void Backward(const MaskRule& mask) {
    BlockBackward(Rows(q), Rows(k), Rows(v), Rows(d_o), lse.data(), delta.data(), kD, scale, mask,
                  {dq.data(), kN, kD}, {dk.data(), kN, kD}, {dv.data(), kN, kD});
  }
};

// Fraction of the block's (query, key) pairs the mask leaves visible.
double VisibleFraction(const BlockData& data, const MaskRule& mask) {
  int64_t visible = 0;
  for (int64_t qp : data.positions) {
    for (int64_t kp : data.positions) visible += mask.Visible(qp, kp) ? 1 : 0;
  }
  return static_cast<double>(visible) / static_cast<double>(kN * kN);
}

constexpr double kForwardFlops = 4.0 * kN * kN * kD;
constexpr double kBackwardFlops = 2.5 * kForwardFlops;

void ForwardBench(benchmark::State& state, const Mask& mask_spec) {
  const MaskRule mask(mask_spec);
  BlockData data;
  GemmReferenceFlops();  // measured before the timed loop
  RunAndReport(
      state, kForwardFlops, true,
      [&] {
        data.Forward(mask);
        benchmark::DoNotOptimize(data.o.data());
        benchmark::ClobberMemory();
      },
      VisibleFraction(data, mask));
}

void BackwardBench(benchmark::State& state, const Mask& mask_spec) {
  const MaskRule mask(mask_spec);
  BlockData data;
  data.PrepareBackward(mask);
  GemmReferenceFlops();
  RunAndReport(
      state, kBackwardFlops, true,
      [&] {
        data.Backward(mask);
        benchmark::DoNotOptimize(data.dq.data());
        benchmark::ClobberMemory();
      },
      VisibleFraction(data, mask));
}

void BM_GemmReference(benchmark::State& state) {
  // Reports the startup reference rate; the loop body is trivial.
  const double rate = GemmReferenceFlops();
  for (auto _ : state) benchmark::DoNotOptimize(rate);
  state.counters["gemm_ref_GFLOP/s"] = rate * 1e-9;
}
void BM_BlockForward512(benchmark::State& state) { ForwardBench(state, Mask::Full()); }
void BM_BlockBackward512(benchmark::State& state) { BackwardBench(state, Mask::Full()); }
void BM_BlockForward512CausalDiagonal(benchmark::State& state) {
  ForwardBench(state, Mask::Causal());
}
void BM_BlockBackward512CausalDiagonal(benchmark::State& state) {
  BackwardBench(state, Mask::Causal());
}
BENCHMARK(BM_GemmReference)->Iterations(1);
BENCHMARK(BM_BlockForward512)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BlockBackward512)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BlockForward512CausalDiagonal)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BlockBackward512CausalDiagonal)->Unit(benchmark::kMicrosecond);

}  // namespace

// Reference fp32 GEMM rate of this machine in FLOP/s (computed once, on first use).
double GemmReferenceFlops() {
  static const double rate = [] {
    const double qk = GemmSeconds(kN, kN, kD, /*b_transposed=*/true);   // S = Q K^T
    const double pv = GemmSeconds(kN, kD, kN, /*b_transposed=*/false);  // O = P V
    return 4.0 * kN * kN * kD / (qk + pv);
  }();
  return rate;
}

}  // namespace meshplan::exec

// The reference GEMM rate is measured at startup, before any benchmark runs.
int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const double rate = meshplan::exec::GemmReferenceFlops();
  benchmark::AddCustomContext("gemm_ref_GFLOP/s", std::to_string(rate * 1e-9));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
