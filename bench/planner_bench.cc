// Planner speed targets (issue: planner foundation):
//   full search, 4096 GPUs (512 nodes x 8) at 4M tokens:   < 200 ms on one core
//   full search, 16384 GPUs (2048 nodes x 8) at 16M tokens: < 1 s
//   Mesh schedule expansion, 1024 ranks (32 x 32), 1M tokens, fwd+bwd: < 1 s
//   (issue 33) full search, 1024 GPUs at 1M tokens under every mask: within 2x of causal
// Run: ./build/bench/planner_bench
#include <benchmark/benchmark.h>

#include "core/cluster/topology_toml.h"
#include "core/sequence/mask.h"
#include "planner/schemes/registry.h"
#include "planner/search.h"
#include "planner/strategy.h"

namespace meshplan::planner {
namespace {

// The default DGX H100 cluster with `nodes` nodes.
Topology H100Cluster(int64_t nodes) {
  Topology t = DefaultTopology();
  t.levels.back().group_size = nodes;
  return t;
}

// The full search of `workload` on `topology`, timed per iteration.
void MeasureSearch(benchmark::State& state, const Topology& topology, const Workload& workload) {
  int64_t candidates = 0;
  for (auto _ : state) {
    // A fresh context per iteration: route and work caches are part of the measured cost.
    const PlanContext ctx(workload, topology);
    SearchResult result = Search(ctx, {});
    candidates = result.evaluated;
    benchmark::DoNotOptimize(result.ranked.data());
  }
  state.counters["gpus"] = static_cast<double>(topology.num_gpus());
  state.counters["candidates"] = static_cast<double>(candidates);
}

void SearchAt(benchmark::State& state, int64_t nodes, int64_t seq) {
  Workload workload = Workload::Default();
  workload.seq_len = seq;
  MeasureSearch(state, H100Cluster(nodes), workload);
}

void BM_Search4096GpusAt4M(benchmark::State& state) { SearchAt(state, 512, int64_t{4} << 20); }
void BM_Search16384GpusAt16M(benchmark::State& state) { SearchAt(state, 2048, int64_t{16} << 20); }
BENCHMARK(BM_Search4096GpusAt4M)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Search16384GpusAt16M)->Unit(benchmark::kMillisecond);

// The full search on 1024 GPUs (128 nodes) at 1M tokens under each mask: the cost of a candidate
// must not grow with the mask's (issue 33: prefix:1K took 10.7 s against causal's 0.09 s).
void BM_Search1024GpusAt1MByMask(benchmark::State& state, const char* mask_text) {
  Workload workload = Workload::Default();
  workload.seq_len = int64_t{1} << 20;
  auto mask = ParseMask(mask_text);
  if (!mask.ok()) {
    state.SkipWithError(mask.status().message().c_str());
    return;
  }
  workload.mask = *mask;
  if (Status st = DrawDocuments(&workload.mask, workload.seq_len); !st.ok()) {
    state.SkipWithError(st.message().c_str());
    return;
  }
  MeasureSearch(state, H100Cluster(128), workload);
}
BENCHMARK_CAPTURE(BM_Search1024GpusAt1MByMask, causal, "causal")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Search1024GpusAt1MByMask, full, "full")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Search1024GpusAt1MByMask, window_512, "window:512")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Search1024GpusAt1MByMask, window_32K, "window:32K")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Search1024GpusAt1MByMask, prefix_1K, "prefix:1K")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Search1024GpusAt1MByMask, docs_sampled,
                  "docs-sampled:lognormal:median=64K:sigma=1.5:seed=3")
    ->Unit(benchmark::kMillisecond);

void BM_MeshExpand1024Ranks(benchmark::State& state) {
  const Topology topology = H100Cluster(128);
  const Workload workload = Workload::Default();
  const PlanContext ctx(workload, topology);
  SchemeParams params;
  params.scheme = Scheme("mesh");
  params.layout = Layout::kZigzag;
  params.tile_a = 32;
  params.tile_b = 32;
  params.placement = {"q", "kv"};
  const auto strategy = MakeStrategy(Scheme("mesh"));
  int64_t ops = 0;
  for (auto _ : state) {
    auto schedule = strategy->Expand(ctx, params);
    if (!schedule.ok()) {
      state.SkipWithError(schedule.status().message().c_str());
      return;
    }
    ops = schedule->TotalOps();
    benchmark::DoNotOptimize(schedule->ranks.data());
  }
  state.counters["ops"] = static_cast<double>(ops);
}
BENCHMARK(BM_MeshExpand1024Ranks)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace meshplan::planner

BENCHMARK_MAIN();
