// Which plans each framework runs, and the settings that run them (planner/frameworks.h, each
// scheme's Strategy::RunIn). Expected strings are the frameworks' own flags and calls as
// docs/frameworks.md cites them (Megatron-LM arguments.py, TransformerEngine context_parallel.py,
// yunchang globals.py / attn_layer.py, InternEvo's parallel.sequence_2D).
#include "planner/frameworks.h"

#include <gtest/gtest.h>

namespace meshplan::planner {
namespace {

SchemeParams Plan(const char* scheme, Layout layout, int64_t u, int64_t r,
                  std::vector<std::string> placement, bool cache = false, int64_t window = 1) {
  SchemeParams p;
  p.scheme = Scheme(scheme);
  p.layout = layout;
  p.ulysses = u;
  p.ring = r;
  p.window = window;
  p.placement = std::move(placement);
  p.cache_forward = cache;
  return p;
}

Workload Causal() { return Workload::Default(); }  // causal, forward+backward

TEST(Frameworks, MegatronRunsItsFourCommTypes) {
  const auto m = Framework::kMegatron;
  EXPECT_EQ(RunIn(m, Plan("ring", Layout::kZigzag, 1, 8, {"cp"}), Causal(), 8).settings,
            "--context-parallel-size 8 --cp-comm-type p2p");
  EXPECT_EQ(RunIn(m, Plan("allgather-kv", Layout::kZigzag, 1, 8, {"cp"}), Causal(), 8).settings,
            "--context-parallel-size 8 --cp-comm-type all_gather");
  EXPECT_EQ(
      RunIn(m, Plan("ulysses", Layout::kContiguous, 8, 1, {"ulysses"}, true), Causal(), 8).settings,
      "--context-parallel-size 8 --cp-comm-type a2a");
  EXPECT_EQ(RunIn(m, Plan("usp", Layout::kZigzag, 4, 2, {"ulysses", "ring"}), Causal(), 8).settings,
            "--context-parallel-size 8 --cp-comm-type a2a+p2p "
            "--hierarchical-context-parallel-sizes 4 2");
}

TEST(Frameworks, MegatronRefusesWhatItDoesNotRun) {
  const auto m = Framework::kMegatron;
  // TE's split is zigzag (DualChunkSwap): a striped ring is not Megatron's.
  EXPECT_NE(RunIn(m, Plan("ring", Layout::kStriped, 1, 8, {"cp"}), Causal(), 8).why_not, "");
  // A full mask costs the same on contiguous shards.
  Workload full = Causal();
  full.mask = Mask::Full();
  EXPECT_EQ(RunIn(m, Plan("ring", Layout::kContiguous, 1, 8, {"cp"}), full, 8).why_not, "");
  // No forward cache on its rings; the a2a level is the inner one.
  EXPECT_NE(RunIn(m, Plan("ring", Layout::kZigzag, 1, 8, {"cp"}, true), Causal(), 8).why_not, "");
  EXPECT_NE(RunIn(m, Plan("usp", Layout::kZigzag, 4, 2, {"ring", "ulysses"}), Causal(), 8).why_not,
            "");
  EXPECT_EQ(RunIn(m, Plan("mesh", Layout::kZigzag, 1, 1, {"q", "kv"}), Causal(), 8).why_not,
            "Megatron-Core (TransformerEngine) does not implement mesh");
}

TEST(Frameworks, YunchangNamesItsRingImplementations) {
  const auto y = Framework::kYunchang;
  EXPECT_EQ(
      RunIn(y, Plan("usp", Layout::kStriped, 4, 2, {"ulysses", "ring"}), Causal(), 8).settings,
      "set_seq_parallel_pg(4, 2, rank, world_size, use_ulysses_low=True); "
      "LongContextAttention(ring_impl_type=\"strip\")");
  EXPECT_EQ(RunIn(y, Plan("ring", Layout::kContiguous, 1, 8, {"cp"}), Causal(), 8).settings,
            "set_seq_parallel_pg(1, 8, rank, world_size, use_ulysses_low=True); "
            "LongContextAttention(ring_impl_type=\"basic\")");
  // zigzag and strip assert causal; use_ulysses_low=False is right only for zigzag.
  Workload full = Causal();
  full.mask = Mask::Full();
  EXPECT_NE(RunIn(y, Plan("ring", Layout::kZigzag, 1, 8, {"cp"}), full, 8).why_not, "");
  EXPECT_NE(RunIn(y, Plan("usp", Layout::kStriped, 4, 2, {"ring", "ulysses"}), Causal(), 8).why_not,
            "");
  EXPECT_EQ(RunIn(y, Plan("usp", Layout::kZigzag, 4, 2, {"ring", "ulysses"}), Causal(), 8).settings,
            "set_seq_parallel_pg(4, 2, rank, world_size, use_ulysses_low=False); "
            "LongContextAttention(ring_impl_type=\"zigzag\")");
}

TEST(Frameworks, InternEvoRunsTheDoubleRingHeadFirstOrLast) {
  const auto i = Framework::kInternEvo;
  const SchemeParams head_first =
      Plan("loongtrain", Layout::kZigzag, 2, 8, {"head", "inner", "outer"}, false, 4);
  EXPECT_EQ(RunIn(i, head_first, Causal(), 16).settings,
            "parallel = dict(tensor=dict(size=16, mode=\"isp\"), sequence_2D=dict(enable=True, "
            "head_size=2, context_size=8, window_size=4, "
            "device_placement_strategy=dict(head_first=True, interleaved=False)))");
  EXPECT_NE(
      RunIn(i, Plan("loongtrain", Layout::kZigzag, 2, 8, {"inner", "head", "outer"}, false, 4),
            Causal(), 16)
          .why_not,
      "");
  EXPECT_NE(RunIn(i, Plan("usp", Layout::kZigzag, 2, 8, {"ulysses", "ring"}), Causal(), 16).why_not,
            "");
}

TEST(Frameworks, AnyRunsEverythingAndMagiNothing) {
  const SchemeParams mesh = Plan("mesh", Layout::kZigzag, 1, 1, {"q", "kv"});
  EXPECT_EQ(RunIn(Framework::kAny, mesh, Causal(), 8).why_not, "");
  EXPECT_NE(FrameworkUnsupported(Framework::kMagi), "");
  EXPECT_EQ(FrameworkUnsupported(Framework::kMegatron), "");
  EXPECT_EQ(ParseFramework("internevo").value(), Framework::kInternEvo);
  EXPECT_FALSE(ParseFramework("deepspeed").ok());
}

}  // namespace
}  // namespace meshplan::planner
