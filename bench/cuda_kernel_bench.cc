// CUDA block-kernel speed on the GPU: TFLOP/s of the attention block kernels (executor/cuda/
// attention_kernels.h, KernelPath::kAuto: the tensor-core kernels on sm_80+) and their fraction of
// the same GPU's cuBLAS bf16 GEMM rate, measured in the same run.
//   ./build/bench/cuda_kernel_bench [--benchmark_filter=...]
// Without a usable CUDA device it prints one line and exits 0.
//
// FLOP conventions (FlashAttention's, as in bench/cpu_kernel_bench.cc):
//   GEMM m x n x k:   2 m n k  (cublasGemmEx, bf16 inputs and output, CUBLAS_COMPUTE_32F,
//                     8192 x 8192 x 8192: the reference rate "gemm_TFLOP/s")
//   block forward:    4 n_q n_k d per query head (QK^T and PV; softmax not counted)
//   block backward:   2.5 x forward (QK^T recomputation, dV, dP, dQ, dK: 5 GEMMs against 2)
//   causal:           half of the above (the useful, visible pairs of the square diagonal block)
// Kernels: every problem runs on the own kernels ("/own": attention_kernels.h, KernelPath::kAuto,
// the tensor-core kernels on sm_80+) and on the cuDNN path ("/cudnn": cuDNN's fused attention
// plus the fold of its output into the fp32 accumulators, executor/cuda/cudnn_attention.h; skipped
// with the reason where libcudnn.so.9 cannot be opened).
// Problems: square blocks n_q = n_k in {1K, 2K, 4K, 8K, 16K}, head dim 64 and 128, masks full and
// causal, bf16, batch 1, GQA with 8 query heads per KV head, and enough query heads that one
// full-mask launch does at least 1e12 FLOP. Each iteration is one launch timed with CUDA events
// (manual time). "fraction_of_gemm" = TFLOP/s / gemm_TFLOP/s; the GEMM benchmark runs first.
#include <benchmark/benchmark.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "executor/cuda/attention_kernels.h"
#include "executor/cuda/cudnn_attention.h"

namespace meshplan::exec::cuda {
namespace {

constexpr int64_t kGemmN = 8192;
constexpr double kMinLaunchFlops = 1e12;
constexpr int64_t kGroup = 8;  // query heads per KV head

double g_gemm_flops_per_s = 0;  // set by the GEMM benchmark

struct Config {
  int64_t n = 0;
  int32_t dim = 0;
  bool causal = false;
  bool backward = false;
  int64_t heads = 0;  // query heads
  bool cudnn =
      false;  // cuDNN's fused attention (executor/cuda/cudnn_attention.h), else own kernels
};

int64_t HeadsFor(int64_t n, int32_t dim) {
  const double per_head = 4.0 * static_cast<double>(n) * static_cast<double>(n) * dim;
  int64_t heads = static_cast<int64_t>(std::ceil(kMinLaunchFlops / per_head));
  heads = (heads + kGroup - 1) / kGroup * kGroup;
  return std::max<int64_t>(heads, kGroup);
}

double UsefulFlops(const Config& c) {
  double f = 4.0 * static_cast<double>(c.n) * static_cast<double>(c.n) * c.dim *
             static_cast<double>(c.heads);
  if (c.backward) f *= 2.5;
  if (c.causal) f *= 0.5;
  return f;
}

// Device buffers shared by every benchmark, sized for the largest problem: one buffer of random
// bf16 values read as Q, K, V and dO (read-only, so aliasing them is harmless), and fp32 outputs.
struct Pool {
  void* inputs = nullptr;  // bf16
  float* o = nullptr;      // query-shaped fp32 (also the GEMM's C)
  float* dq = nullptr;
  float* dk = nullptr;  // KV-shaped fp32
  float* dv = nullptr;
  float* lse = nullptr;  // one per query row and head
  float* delta = nullptr;
  int64_t* positions = nullptr;
  bool ok = false;
};
Pool g_pool;

bool Check(cudaError_t err, benchmark::State& state, const char* what) {
  if (err == cudaSuccess) return true;
  state.SkipWithError((std::string(what) + ": " + cudaGetErrorString(err)).c_str());
  return false;
}

bool AllocatePool(const std::vector<Config>& configs) {
  int64_t q_elems = kGemmN * kGemmN * 2;  // the GEMM's A and B come from the inputs
  int64_t rows = 0, max_n = 0;
  for (const Config& c : configs) {
    q_elems = std::max(q_elems, c.n * c.heads * c.dim);
    rows = std::max(rows, c.n * c.heads);
    max_n = std::max(max_n, c.n);
  }
  const int64_t k_elems = q_elems / kGroup;
  auto alloc = [](auto** p, int64_t bytes) {
    return cudaMalloc(reinterpret_cast<void**>(p), static_cast<size_t>(bytes)) == cudaSuccess;
  };
  if (!alloc(&g_pool.inputs, q_elems * 2) || !alloc(&g_pool.o, q_elems * 4) ||
      !alloc(&g_pool.dq, q_elems * 4) || !alloc(&g_pool.dk, k_elems * 4) ||
      !alloc(&g_pool.dv, k_elems * 4) || !alloc(&g_pool.lse, rows * 4) ||
      !alloc(&g_pool.delta, rows * 4) || !alloc(&g_pool.positions, max_n * 8)) {
    return false;
  }
  // Uniform [-1, 1) bf16 from a xorshift generator, uploaded in chunks.
  constexpr int64_t kChunk = int64_t{1} << 24;
  std::vector<__nv_bfloat16> host(static_cast<size_t>(std::min(q_elems, kChunk)));
  uint64_t state = 0x9e3779b97f4a7c15ull;
  for (int64_t done = 0; done < q_elems; done += kChunk) {
    const int64_t n = std::min(kChunk, q_elems - done);
    for (int64_t i = 0; i < n; ++i) {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      const float u = static_cast<float>(state >> 40) * 0x1.0p-24f;  // [0, 1)
      host[static_cast<size_t>(i)] = __float2bfloat16(2.0f * u - 1.0f);
    }
    if (cudaMemcpy(static_cast<__nv_bfloat16*>(g_pool.inputs) + done, host.data(),
                   static_cast<size_t>(n) * 2, cudaMemcpyHostToDevice) != cudaSuccess) {
      return false;
    }
  }
  std::vector<int64_t> positions(static_cast<size_t>(max_n));
  for (int64_t i = 0; i < max_n; ++i) positions[static_cast<size_t>(i)] = i;
  return cudaMemcpy(g_pool.positions, positions.data(), positions.size() * 8,
                    cudaMemcpyHostToDevice) == cudaSuccess;
}

// Times `launch` once per iteration with CUDA events; returns the rate in FLOP/s for `flops` per
// launch (0 after an error, which is reported on `state`) and sets the TFLOP/s counter.
template <typename Launch>
double TimeLaunches(benchmark::State& state, double flops, Launch launch) {
  cudaEvent_t start, stop;
  if (!Check(cudaEventCreate(&start), state, "cudaEventCreate")) return 0;
  if (!Check(cudaEventCreate(&stop), state, "cudaEventCreate")) {
    cudaEventDestroy(start);
    return 0;
  }
  double rate = 0;
  if (Check(launch(), state, "warm-up launch") &&
      Check(cudaDeviceSynchronize(), state, "warm-up")) {
    double seconds = 0;
    bool failed = false;
    for (auto _ : state) {
      cudaEventRecord(start);
      const cudaError_t err = launch();
      cudaEventRecord(stop);
      if (!Check(err, state, "launch") || !Check(cudaEventSynchronize(stop), state, "kernel")) {
        failed = true;
        break;
      }
      float ms = 0;
      cudaEventElapsedTime(&ms, start, stop);
      state.SetIterationTime(ms * 1e-3);
      seconds += ms * 1e-3;
    }
    if (!failed && seconds > 0 && state.iterations() > 0) {
      rate = flops * static_cast<double>(state.iterations()) / seconds;
      state.counters["TFLOP/s"] = rate * 1e-12;
    }
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return rate;
}

void BM_CublasBf16Gemm(benchmark::State& state) {
  if (!g_pool.ok) return state.SkipWithError("device buffers not allocated");
  cublasHandle_t handle;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS)
    return state.SkipWithError("cublasCreate failed");
  const __nv_bfloat16* a = static_cast<const __nv_bfloat16*>(g_pool.inputs);
  const __nv_bfloat16* b = a + kGemmN * kGemmN;
  auto* c = reinterpret_cast<__nv_bfloat16*>(g_pool.o);
  const float alpha = 1.0f, beta = 0.0f;
  const int n = static_cast<int>(kGemmN);
  g_gemm_flops_per_s = TimeLaunches(state, 2.0 * kGemmN * kGemmN * kGemmN, [&] {
    const cublasStatus_t s = cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a,
                                          CUDA_R_16BF, n, b, CUDA_R_16BF, n, &beta, c, CUDA_R_16BF,
                                          n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    return s == CUBLAS_STATUS_SUCCESS ? cudaGetLastError() : cudaErrorUnknown;
  });
  cublasDestroy(handle);
}

// cuDNN for the cudnn benchmarks, opened by the first of them (null with the reason when missing).
std::unique_ptr<CudnnAttention> g_cudnn;
std::string g_cudnn_missing;

CudnnAttention* Cudnn() {
  if (!g_cudnn && g_cudnn_missing.empty()) {
    auto made = CreateCudnnAttention(0);
    if (made.ok()) {
      g_cudnn = std::move(*made);
    } else {
      g_cudnn_missing = made.status().message();
    }
  }
  return g_cudnn.get();
}

void BM_Attention(benchmark::State& state, Config c) {
  if (!g_pool.ok) return state.SkipWithError("device buffers not allocated");
  CudnnAttention* cudnn = nullptr;
  if (c.cudnn && (cudnn = Cudnn()) == nullptr) return state.SkipWithError(g_cudnn_missing.c_str());
  BlockProblem p;
  p.type = InputType::kBf16;
  p.batch = 1;
  p.dim = c.dim;
  p.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.dim)));
  p.head_begin = 0;
  p.head_count = static_cast<int32_t>(c.heads);
  p.group_size = static_cast<int32_t>(kGroup);
  p.mask.params.kind = c.causal ? MaskKind::kCausal : MaskKind::kFull;
  const int32_t hq = static_cast<int32_t>(c.heads), hkv = static_cast<int32_t>(c.heads / kGroup);
  std::vector<int64_t> host_positions(static_cast<size_t>(c.n));
  for (int64_t i = 0; i < c.n; ++i) host_positions[static_cast<size_t>(i)] = i;
  const TensorView q{g_pool.inputs, c.n, 0, hq, g_pool.positions, host_positions.data()};
  const TensorView kv{g_pool.inputs, c.n, 0, hkv, g_pool.positions, host_positions.data()};
  const TensorView o{g_pool.o, c.n, 0, hq, nullptr};
  const TensorView lse{g_pool.lse, c.n, 0, hq, nullptr};
  const TensorView delta{g_pool.delta, c.n, 0, hq, nullptr};
  const TensorView dq{g_pool.dq, c.n, 0, hq, nullptr};
  const TensorView dk{g_pool.dk, c.n, 0, hkv, nullptr};
  const TensorView dv{g_pool.dv, c.n, 0, hkv, nullptr};
  const int64_t q_elems = c.n * c.heads * c.dim;
  const int64_t k_elems = q_elems / kGroup;
  // A consistent forward first (O, LSE from an empty accumulator), then delta: the backward then
  // sees realistic P. Repeated forwards keep merging the same block, which leaves the cost as is.
  if (!Check(LaunchFill(g_pool.o, 0.0f, q_elems, nullptr), state, "fill") ||
      !Check(LaunchFill(g_pool.lse, -INFINITY, c.n * c.heads, nullptr), state, "fill") ||
      !Check(LaunchBlockForward(p, q, kv, kv, o, lse, KernelPath::kAuto, nullptr), state,
             "forward")) {
    return;
  }
  if (c.backward) {
    if (!Check(
            LaunchDelta(p.type, g_pool.o, g_pool.inputs, g_pool.delta, 1, c.n, hq, c.dim, nullptr),
            state, "delta") ||
        !Check(LaunchFill(g_pool.dq, 0.0f, q_elems, nullptr), state, "fill") ||
        !Check(LaunchFill(g_pool.dk, 0.0f, k_elems, nullptr), state, "fill") ||
        !Check(LaunchFill(g_pool.dv, 0.0f, k_elems, nullptr), state, "fill")) {
      return;
    }
  }
  if (!Check(cudaDeviceSynchronize(), state, "set-up")) return;
  state.counters["heads"] = static_cast<double>(c.heads);
  const auto status_to_error = [&](const Status& st) {
    if (!st.ok()) state.SkipWithError(st.message().c_str());
    return st.ok() ? cudaSuccess : cudaErrorUnknown;
  };
  if (cudnn != nullptr && !cudnn->Supports(p, q, kv, c.backward)) {
    return state.SkipWithError("cuDNN cannot compute this block");
  }
  const double rate = TimeLaunches(state, UsefulFlops(c), [&] {
    if (cudnn != nullptr) {
      return status_to_error(c.backward
                                 ? cudnn->Backward(p, q, kv, kv, q, lse, delta, dq, dk, dv, nullptr)
                                 : cudnn->Forward(p, q, kv, kv, o, lse, nullptr));
    }
    return c.backward ? LaunchBlockBackward(p, q, kv, kv, q, lse, delta, dq, dk, dv,
                                            KernelPath::kAuto, nullptr)
                      : LaunchBlockForward(p, q, kv, kv, o, lse, KernelPath::kAuto, nullptr);
  });
  if (rate > 0 && g_gemm_flops_per_s > 0) {  // absent when the GEMM was filtered out
    state.counters["fraction_of_gemm"] = rate / g_gemm_flops_per_s;
    state.counters["gemm_TFLOP/s"] = g_gemm_flops_per_s * 1e-12;
  }
}

std::vector<Config> Configs() {
  std::vector<Config> out;
  for (bool backward : {false, true}) {
    for (int32_t dim : {64, 128}) {
      for (bool causal : {false, true}) {
        for (int64_t n : {1024, 2048, 4096, 8192, 16384}) {
          for (bool cudnn : {false, true})
            out.push_back({n, dim, causal, backward, HeadsFor(n, dim), cudnn});
        }
      }
    }
  }
  return out;
}

std::string Name(const Config& c) {
  return std::string(c.backward ? "BM_Backward" : "BM_Forward") +
         "/n:" + std::to_string(c.n / 1024) + "K/d:" + std::to_string(c.dim) +
         (c.causal ? "/causal" : "/full") + (c.cudnn ? "/cudnn" : "/own");
}

}  // namespace
}  // namespace meshplan::exec::cuda

int main(int argc, char** argv) {
  using namespace meshplan::exec::cuda;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("cuda_kernel_bench: no CUDA device, skipping\n");
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const std::vector<Config> configs = Configs();
  g_pool.ok = AllocatePool(configs);
  if (!g_pool.ok)
    std::fprintf(stderr, "cuda_kernel_bench: device buffers could not be allocated\n");
  // Registration order is run order: the GEMM reference first.
  benchmark::RegisterBenchmark("BM_CublasBf16Gemm/8192", BM_CublasBf16Gemm)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  for (const Config& c : configs) {
    benchmark::RegisterBenchmark(Name(c).c_str(), BM_Attention, c)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
