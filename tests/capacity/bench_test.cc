// `meshplan bench`'s driver (capacity/bench.h) on a small grid of the shipped 4-GPU cluster: rows
// in order, FLOPs by LongCA's count derived by hand, a scheme without a plan and a point the
// memory preflight refuses saying why, and the spec's own errors.
#include "capacity/bench.h"

#include <gtest/gtest.h>

#include <string>

#include "core/cluster/topology_catalog.h"
#include "core/cluster/topology_toml.h"
#include "planner/schemes/registry.h"

namespace meshplan::capacity {
namespace {

BenchSpec SmallSpec() {
  BenchSpec spec;
  auto topology = LoadTopology("dgx-h100-4gpu");
  EXPECT_TRUE(topology.ok()) << topology.status().message();
  spec.topology = *topology;
  spec.base = Workload::Default();
  spec.base.q_heads = 2;
  spec.base.kv_heads = 2;
  spec.base.head_dim = 16;
  spec.base.pass = Pass::kForwardBackward;
  spec.masks = {{"causal", Mask::Causal()}};
  spec.seq_lens = {128, 256};
  spec.schemes = {Scheme("ring"), Scheme("ulysses")};
  spec.repeat = 1;
  spec.config.run.recv_timeout = std::chrono::milliseconds(20000);
  return spec;
}

TEST(RunBench, RunsEachSchemesBestPlanAndCountsItsFlops) {
  const BenchSpec spec = SmallSpec();
  std::vector<int64_t> progress;
  auto rows = RunBench(spec, [&](const BenchRow&, int64_t done, int64_t total) {
    EXPECT_EQ(total, 4);
    progress.push_back(done);
  });
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 4u);
  EXPECT_EQ(progress, (std::vector<int64_t>{1, 2, 3, 4}));
  // Order: length, then scheme.
  EXPECT_EQ((*rows)[0].seq_len, 128);
  EXPECT_EQ((*rows)[0].scheme, Scheme("ring"));
  EXPECT_EQ((*rows)[1].scheme, Scheme("ulysses"));
  EXPECT_EQ((*rows)[2].seq_len, 256);

  const BenchRow& ring = (*rows)[0];
  ASSERT_EQ(ring.outcome, BenchOutcome::kRan) << ring.reason;
  EXPECT_EQ(ring.ranks, 4);
  // Causal 128 tokens: 128 x 129 / 2 = 8256 visible pairs; fwd+bwd = 3.5 forwards of
  // 4 x batch 1 x 8256 x 2 heads x 16 = 1056768 FLOPs: 3698688.
  EXPECT_DOUBLE_EQ(ring.flops, 3698688.0);
  EXPECT_GT(ring.predicted_s, 0);
  EXPECT_GT(ring.median_s, 0);
  EXPECT_DOUBLE_EQ(ring.MeasuredTflopsPerRank(), ring.flops / 4 / ring.median_s / 1e12);
  EXPECT_GT(ring.rank_peak_bytes, 0);
  EXPECT_GT(ring.modelled_rank_peak_bytes, 0);
  // Ulysses splits the 2 KV heads over 4 ranks: no plan, and the planner's reason.
  const BenchRow& ulysses = (*rows)[1];
  EXPECT_EQ(ulysses.outcome, BenchOutcome::kNoPlan);
  EXPECT_NE(ulysses.reason.find("KV heads"), std::string::npos) << ulysses.reason;
}

TEST(RunBench, APointThatDoesNotFitIsSkippedWithTheNeed) {
  BenchSpec spec = SmallSpec();
  spec.seq_lens = {128};
  spec.schemes = {Scheme("ring")};
  spec.memory_limit_bytes = 1024;
  spec.memory_limit_source = "test";
  auto rows = RunBench(spec);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].outcome, BenchOutcome::kSkipped);
  EXPECT_NE((*rows)[0].reason.find("host memory"), std::string::npos) << (*rows)[0].reason;
  EXPECT_NE((*rows)[0].reason.find("1.00 KiB is available (test)"), std::string::npos)
      << (*rows)[0].reason;
}

TEST(RunBench, SpecErrorsAreOneLine) {
  BenchSpec spec = SmallSpec();
  spec.masks.clear();
  EXPECT_EQ(RunBench(spec).status().message(), "bench: no masks");
  spec = SmallSpec();
  spec.seq_lens.clear();
  EXPECT_EQ(RunBench(spec).status().message(), "bench: no sequence lengths");
  spec = SmallSpec();
  spec.repeat = 0;
  EXPECT_EQ(RunBench(spec).status().code(), ErrorCode::kInvalidInput);
  // 101 lengths x 100 masks x 1 scheme = 10100 points > 10000.
  spec = SmallSpec();
  spec.schemes = {Scheme("ring")};
  spec.seq_lens.assign(101, 128);
  spec.masks.assign(100, {"causal", Mask::Causal()});
  EXPECT_EQ(RunBench(spec).status().message(),
            "bench: 10100 points (masks x lengths x schemes) exceed the limit of 10000");
  // A documents mask whose lengths do not sum to the sequence: the sweep names the point.
  spec = SmallSpec();
  spec.masks = {{"docs", Mask::Documents({100, 28})}};
  spec.seq_lens = {256};
  const Status st = RunBench(spec).status();
  EXPECT_EQ(st.code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(st.message().rfind("bench: mask docs: ", 0), 0u) << st.message();
}

}  // namespace
}  // namespace meshplan::capacity
