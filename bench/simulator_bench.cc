// Simulator speed targets (issue: simulator):
//   replaying a 1024-rank Mesh forward+backward: >= 2 million events per second on one core;
//   1024 ranks at 1M tokens finish in < 5 s (peak memory < 2 GiB: measure the whole process
//   with /usr/bin/time -v, see docs/benchmarks.md).
// Run: ./build/bench/simulator_bench
#include <benchmark/benchmark.h>

#include "core/cluster/topology_toml.h"
#include "planner/schemes/registry.h"
#include "planner/strategy.h"
#include "simulator/simulate.h"

namespace meshplan::sim {
namespace {

void BM_SimulateMesh1024FwdBwd(benchmark::State& state) {
  Topology topology = DefaultTopology();
  topology.levels.back().group_size = 128;        // 128 x 8 = 1024 H100
  const Workload workload = Workload::Default();  // 1M tokens, fwd+bwd
  const planner::PlanContext ctx(workload, topology);
  SchemeParams params;
  params.scheme = Scheme("mesh");
  params.layout = Layout::kZigzag;
  params.tile_a = 32;
  params.tile_b = 32;
  params.placement = {"q", "kv"};
  auto schedule = planner::MakeStrategy(Scheme("mesh"))->Expand(ctx, params);
  if (!schedule.ok()) {
    state.SkipWithError(schedule.status().message().c_str());
    return;
  }
  const Placement placement(planner::RankDims(params), params.placement);
  std::vector<int64_t> gpu(1024);
  for (int64_t r = 0; r < 1024; ++r) gpu[r] = placement.GpuOf(r);
  SimOptions options;
  options.record_op_times = state.range(0) != 0;
  int64_t events = 0;
  double simulated = 0;
  for (auto _ : state) {
    auto result = Simulate(*schedule, topology, gpu, workload.dtype, options);
    if (!result.ok()) {
      state.SkipWithError(result.status().message().c_str());
      return;
    }
    events = result->events;
    simulated = result->total_s;
    benchmark::DoNotOptimize(result->ranks.data());
  }
  state.counters["events"] = static_cast<double>(events);
  state.counters["ops"] = static_cast<double>(schedule->TotalOps());
  state.counters["events_per_s"] = benchmark::Counter(
      static_cast<double>(events), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["simulated_ms"] = simulated * 1e3;
}
BENCHMARK(BM_SimulateMesh1024FwdBwd)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace meshplan::sim

BENCHMARK_MAIN();
