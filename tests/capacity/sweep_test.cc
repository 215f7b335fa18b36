// Sweeps: rows equal to the planner's single-point results, simulated times, errors.
#include "capacity/sweep.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "capacity/scale_topology.h"
#include "core/cluster/topology_toml.h"
#include "planner/context.h"
#include "planner/schemes/registry.h"
#include "planner/search.h"

namespace meshplan::capacity {
namespace {

// The best plan of `scheme` in a single-point search (first ranked: fits first, then time).
const planner::Estimate* BestOf(const planner::SearchResult& result, Scheme scheme) {
  for (const planner::Estimate& e : result.ranked) {
    if (e.params.scheme == scheme) return &e;
  }
  return nullptr;
}

TEST(RunSweep, RowsEqualThePlannersSinglePointResults) {
  SweepSpec spec;
  spec.topologies = {DefaultTopology()};
  spec.gpus = {8, 32, 128};
  spec.seq_lens = {int64_t{128} << 10, int64_t{1} << 20};
  spec.schemes = {Scheme("ring"), Scheme("ulysses"), Scheme("mesh"), Scheme("usp")};
  spec.reserved_memory_bytes = 60 * 1024.0 * 1024 * 1024;  // some plans stop fitting
  int64_t calls = 0, last_done = 0, last_total = 0;
  auto rows = RunSweep(spec, [&](int64_t done, int64_t total) {
    ++calls;
    EXPECT_EQ(done, last_done + 1);
    last_done = done;
    last_total = total;
  });
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  EXPECT_EQ(calls, 6);
  EXPECT_EQ(last_total, 6);
  ASSERT_EQ(rows->size(), 6u * 4u);

  size_t i = 0;
  bool saw_not_fitting = false, saw_invalid = false;
  for (int64_t gpus : spec.gpus) {
    auto topology = ScaleTopology(spec.topologies[0], gpus);
    ASSERT_TRUE(topology.ok());
    for (int64_t seq : spec.seq_lens) {
      Workload w = spec.base;
      w.seq_len = seq;
      const planner::PlanContext ctx(w, *topology, spec.reserved_memory_bytes);
      // Each scheme on its own, as `meshplan plan --schemes X` would.
      for (Scheme scheme : spec.schemes) {
        const SweepRow& row = (*rows)[i++];
        EXPECT_EQ(row.topology, "dgx-h100-32node");
        EXPECT_EQ(row.gpus, gpus);
        EXPECT_EQ(row.seq_len, seq);
        ASSERT_EQ(row.scheme, scheme);
        planner::SearchOptions options;
        options.schemes = {scheme};
        const planner::SearchResult single = planner::Search(ctx, options);
        const planner::Estimate* best = BestOf(single, scheme);
        ASSERT_EQ(row.valid, best != nullptr) << SchemeName(scheme) << " " << gpus;
        if (best == nullptr) {
          saw_invalid = true;
          ASSERT_EQ(single.rejected.size(), 1u);
          EXPECT_EQ(row.reason, single.rejected[0].reason);
          continue;
        }
        saw_not_fitting = saw_not_fitting || !best->fits;
        EXPECT_EQ(planner::DescribeParams(row.params), planner::DescribeParams(best->params));
        EXPECT_EQ(row.time_s, best->time_s);
        EXPECT_EQ(row.compute_s, best->compute_s);
        EXPECT_EQ(row.exposed_comm_s, best->exposed_comm_s);
        EXPECT_EQ(row.bytes_per_gpu, best->bytes_per_rank);
        EXPECT_EQ(row.peak_memory_bytes, best->peak_memory_bytes);
        EXPECT_EQ(row.fits, best->fits);
        EXPECT_DOUBLE_EQ(row.comm_share, best->exposed_comm_s / best->time_s);
        EXPECT_EQ(row.simulated_s, -1);
      }
    }
  }
  EXPECT_TRUE(saw_invalid);      // Ulysses beyond 8 KV heads
  EXPECT_TRUE(saw_not_fitting);  // 1M tokens on 8 GPUs with 60 GiB reserved
}

TEST(RunSweep, SimulateFillsTheSimulatedTime) {
  SweepSpec spec;
  spec.topologies = {DefaultTopology()};
  spec.gpus = {16};
  spec.seq_lens = {int64_t{64} << 10};
  spec.schemes = {Scheme("ring"), Scheme("mesh")};
  spec.simulate = true;
  auto rows = RunSweep(spec);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 2u);
  for (const SweepRow& row : *rows) {
    ASSERT_TRUE(row.valid);
    EXPECT_GT(row.simulated_s, 0);
    // The simulator and the estimate agree within the project's tolerance (docs/simulator.md).
    EXPECT_NEAR(row.simulated_s / row.time_s, 1.0, 0.25) << SchemeName(row.scheme);
  }
}

// A sampled document mask is drawn again at each length, the same documents a single plan of
// that length with the drawn lengths (SampleDocumentLengths, the same seed) gets.
TEST(RunSweep, SampledDocumentsAreDrawnForEachLength) {
  SweepSpec spec;
  spec.topologies = {DefaultTopology()};
  spec.gpus = {32};
  spec.seq_lens = {int64_t{128} << 10, int64_t{512} << 10};
  spec.schemes = {Scheme("ring"), Scheme("mesh")};
  auto mask = ParseMask("docs-sampled:lognormal:median=16K:seed=5");
  ASSERT_TRUE(mask.ok());
  spec.base.mask = *mask;
  auto rows = RunSweep(spec);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 4u);
  auto topology = ScaleTopology(spec.topologies[0], 32);
  ASSERT_TRUE(topology.ok());
  size_t i = 0;
  for (int64_t seq : spec.seq_lens) {
    auto lengths = SampleDocumentLengths(*mask->sampler, seq);
    ASSERT_TRUE(lengths.ok());
    Workload w = spec.base;
    w.seq_len = seq;
    w.mask = Mask::Documents(*lengths);
    const planner::PlanContext ctx(w, *topology, spec.reserved_memory_bytes);
    for (Scheme scheme : spec.schemes) {
      const SweepRow& row = (*rows)[i++];
      planner::SearchOptions options;
      options.schemes = {scheme};
      const planner::SearchResult single = planner::Search(ctx, options);
      const planner::Estimate* best = BestOf(single, scheme);
      ASSERT_NE(best, nullptr);
      ASSERT_TRUE(row.valid) << row.reason;
      EXPECT_EQ(row.time_s, best->time_s) << SchemeName(scheme) << " " << seq;
    }
  }
}

TEST(RunSweep, Errors) {
  SweepSpec spec;
  spec.seq_lens = {4096};
  EXPECT_FALSE(RunSweep(spec).ok());  // no topology
  spec.topologies = {DefaultTopology()};
  spec.seq_lens.clear();
  EXPECT_FALSE(RunSweep(spec).ok());  // no sequence
  spec.seq_lens = {4096};
  spec.gpus = {8, 12};
  auto bad_gpus = RunSweep(spec);
  ASSERT_FALSE(bad_gpus.ok());
  EXPECT_NE(bad_gpus.status().message().find("12 GPUs"), std::string::npos)
      << bad_gpus.status().message();
  spec.gpus = {8};
  spec.base.q_heads = 60;
  auto bad_workload = RunSweep(spec);
  ASSERT_FALSE(bad_workload.ok());
  EXPECT_NE(bad_workload.status().message().find("S=4K"), std::string::npos)
      << bad_workload.status().message();
}

TEST(RunSweep, MoreThanAMillionPointsAreRefusedBeforeAnyPlanning) {
  // 1 topology x 2 GPU counts x 500,001 lengths = 1,000,002 points > 1,000,000.
  SweepSpec spec;
  spec.topologies = {DefaultTopology()};
  spec.gpus = {8, 16};
  for (int64_t s = 1; s <= 500'001; ++s) spec.seq_lens.push_back(s);
  auto rows = RunSweep(spec);
  ASSERT_FALSE(rows.ok());
  EXPECT_EQ(rows.status().message(),
            "sweep: 1 topologies x 2 GPU counts x 500001 sequence lengths is more than the 1000000 "
            "points one sweep "
            "plans");
}

}  // namespace
}  // namespace meshplan::capacity
