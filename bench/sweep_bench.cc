// Capacity-planning sweep speed (issue: capacity planning):
//   5 schemes x 8 GPU counts (8..1024 doubling, DGX H100 nodes) x 8 sequence lengths (32K..4M
//   doubling), planner only: < 2 s
// Run: taskset -c 0 ./build/bench/sweep_bench
#include <benchmark/benchmark.h>

#include <utility>
#include <vector>

#include "capacity/sweep.h"
#include "core/cluster/topology_toml.h"
#include "planner/schemes/registry.h"

namespace meshplan::capacity {
namespace {

void SweepBench(benchmark::State& state, std::vector<Scheme> schemes) {
  SweepSpec spec;
  spec.topologies = {DefaultTopology()};
  for (int64_t g = 8; g <= 1024; g *= 2) spec.gpus.push_back(g);
  for (int64_t s = int64_t{32} << 10; s <= (int64_t{4} << 20); s *= 2) spec.seq_lens.push_back(s);
  spec.schemes = std::move(schemes);
  size_t rows = 0;
  for (auto _ : state) {
    auto result = RunSweep(spec);
    if (!result.ok()) {
      state.SkipWithError(result.status().message().c_str());
      return;
    }
    rows = result->size();
    benchmark::DoNotOptimize(result->data());
  }
  state.counters["rows"] = static_cast<double>(rows);
}
// The target: ring, Ulysses, USP, LoongTrain and Mesh-Attention.
void BM_Sweep5Schemes8Gpus8Seqs(benchmark::State& state) {
  SweepBench(state, {Scheme("ring"), Scheme("ulysses"), Scheme("usp"), Scheme("loongtrain"),
                     Scheme("mesh")});
}
// For information: every scheme (empty list).
void BM_SweepAllSchemes8Gpus8Seqs(benchmark::State& state) { SweepBench(state, {}); }
BENCHMARK(BM_Sweep5Schemes8Gpus8Seqs)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SweepAllSchemes8Gpus8Seqs)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace meshplan::capacity

BENCHMARK_MAIN();
