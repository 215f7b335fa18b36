// Whole-configuration search speed (issue 47): `meshplan step --search` for Llama 3.1 405B at 1M
// tokens on 16384 H100 (2048 DGX nodes), 1024 sequences a step, every TP x CP x DP x PP split
// with its recompute and CP plan: target < 2 s.
// Run: ./build/bench/step_search_bench
#include <benchmark/benchmark.h>

#include "core/cluster/topology_toml.h"
#include "step/config_search.h"

namespace meshplan::step {
namespace {

// Llama 3.1 405B's config.json (models/llama-3.1-405b.json).
ModelConfig Llama405b() {
  ModelConfig m;
  m.name = "llama-3.1-405b";
  m.q_heads = 128;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.layers = 126;
  m.hidden_size = 16384;
  m.intermediate_size = 53248;
  m.vocab_size = 128256;
  m.tied_embeddings = false;
  return m;
}

void BM_Search405bOn16384Gpus(benchmark::State& state) {
  StepRequest request;
  request.cluster = DefaultTopology();
  request.cluster.levels.back().group_size = 2048;
  request.model = Llama405b();
  request.seq = int64_t{1} << 20;
  request.options.global_batch = 1024;
  request.options.reserve_bytes = 4.0 * (1 << 30);
  int64_t evaluated = 0, candidates = 0;
  for (auto _ : state) {
    auto search = SearchStepConfigs(request, {});
    if (!search.ok()) {
      state.SkipWithError(search.status().message().c_str());
      return;
    }
    evaluated = search->evaluated;
    candidates = search->candidates;
    benchmark::DoNotOptimize(search->ranked.data());
  }
  state.counters["candidates"] = static_cast<double>(candidates);
  state.counters["planned"] = static_cast<double>(evaluated);
}
BENCHMARK(BM_Search405bOn16384Gpus)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace meshplan::step

BENCHMARK_MAIN();
