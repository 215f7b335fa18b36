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

// Workload::Default()'s sequence, 1M = 1048576 tokens, on the Megatron line.
constexpr const char* kSeq = " --seq-length 1048576";

Workload WithSeq(Workload w, int64_t seq) {
  w.seq_len = seq;
  return w;
}

FrameworkJob Job(int64_t cp, int64_t tp = 1, int64_t dp = 1) {
  FrameworkJob job;
  job.cp_gpus = cp;
  job.tp = tp;
  job.dp = dp;
  return job;
}

TEST(Frameworks, MegatronRunsItsFourCommTypes) {
  const auto m = Framework::kMegatron;
  const std::string tp1 = "--tensor-model-parallel-size 1 --context-parallel-size 8";
  EXPECT_EQ(RunIn(m, Plan("ring", Layout::kZigzag, 1, 8, {"cp"}), Causal(), 8).settings,
            tp1 + " --cp-comm-type p2p" + kSeq);
  EXPECT_EQ(RunIn(m, Plan("allgather-kv", Layout::kZigzag, 1, 8, {"cp"}), Causal(), 8).settings,
            tp1 + " --cp-comm-type all_gather" + kSeq);
  EXPECT_EQ(
      RunIn(m, Plan("ulysses", Layout::kContiguous, 8, 1, {"ulysses"}, true), Causal(), 8).settings,
      tp1 + " --cp-comm-type a2a" + kSeq);
  EXPECT_EQ(RunIn(m, Plan("usp", Layout::kZigzag, 4, 2, {"ulysses", "ring"}), Causal(), 8).settings,
            tp1 + " --cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes 4 2" + kSeq);
}

TEST(Frameworks, MegatronsLineIsWholeWithTensorAndSequenceParallelism) {
  // TP 8 x CP 32 at 1M = 1048576 tokens: Megatron turns sequence parallelism off at TP 1
  // (arguments.py), so the line asks for it only beside TP > 1.
  const Workload w = WithSeq(Causal(), 1048576);
  EXPECT_EQ(RunIn(Framework::kMegatron, Plan("ring", Layout::kZigzag, 1, 32, {"cp"}), w, Job(32, 8))
                .settings,
            "--tensor-model-parallel-size 8 --sequence-parallel --context-parallel-size 32 "
            "--cp-comm-type p2p --seq-length 1048576");
}

TEST(Frameworks, MegatronRefusesASequenceItsValidateArgsRefuses) {
  const auto m = Framework::kMegatron;
  const SchemeParams ring = Plan("ring", Layout::kContiguous, 1, 8, {"cp"});
  // A full mask on 8 GPUs: 8200 = 8 x 1025 splits in 8 shards but not in 2 x 8 = 16 chunks.
  Workload full = WithSeq(Causal(), 8200);
  full.mask = Mask::Full();
  const FrameworkRun odd = RunIn(m, ring, full, Job(8));
  EXPECT_NE(odd.why_not.find("a multiple of 2 x CP = 16 whatever the mask, and 8200 is not"),
            std::string::npos)
      << odd.why_not;
  EXPECT_FALSE(odd.variant);
  EXPECT_EQ(RunIn(m, ring, WithSeq(full, 8208), Job(8)).why_not, "");  // 8208 = 16 x 513
  // CP 2 beside TP 8: 40 tokens are 2 x 2 x 10, but each CP rank's 20 do not split over TP 8.
  const FrameworkRun sp =
      RunIn(m, Plan("ring", Layout::kZigzag, 1, 2, {"cp"}), WithSeq(Causal(), 40), Job(2, 8));
  EXPECT_NE(sp.why_not.find("each CP rank's 20 tokens are split over TP = 8"), std::string::npos)
      << sp.why_not;
}

TEST(Frameworks, ARefusalSaysTheBlockerBeforeTheVariantsChoice) {
  const auto m = Framework::kMegatron;
  // A striped ring under a window: the window blocks every ring, not the layout.
  Workload window = Causal();
  window.mask = Mask::Window(4096);
  const FrameworkRun striped = RunIn(m, Plan("ring", Layout::kStriped, 1, 8, {"cp"}), window, 8);
  EXPECT_EQ(striped.why_not,
            "TransformerEngine runs sliding-window attention with cp_comm_type a2a or all_gather "
            "only, not p2p");
  EXPECT_FALSE(striped.variant);
  // Under a causal mask the layout is the reason, and another ring (zigzag) runs.
  const FrameworkRun causal = RunIn(m, Plan("ring", Layout::kStriped, 1, 8, {"cp"}), Causal(), 8);
  EXPECT_EQ(causal.why_not, "its sequences are split in 2 x CP chunks (zigzag), not striped");
  EXPECT_TRUE(causal.variant);
}

TEST(Frameworks, MegatronListsACommTypePerLayerWhenSlidingLayersNeedAnother) {
  // Four layers, Gemma 2's order: 0 and 2 slide. The global layers run the p2p ring; TE runs
  // the window layers with a2a or all_gather only.
  FrameworkJob job = Job(8);
  job.sliding = {true, false, true, false};
  Workload window = Causal();
  window.mask = Mask::Window(4096);
  const SchemeParams ring = Plan("ring", Layout::kZigzag, 1, 8, {"cp"});
  const FrameworkRun alone =
      RunModelIn(Framework::kMegatron, ring, Causal(), nullptr, &window, job);
  EXPECT_EQ(alone.why_not,
            "its sliding-window layers: TransformerEngine runs sliding-window attention with "
            "cp_comm_type a2a or all_gather only, not p2p");
  const SchemeParams gather = Plan("allgather-kv", Layout::kZigzag, 1, 8, {"cp"});
  const FrameworkRun listed =
      RunModelIn(Framework::kMegatron, ring, Causal(), &gather, &window, job);
  EXPECT_EQ(listed.settings,
            std::string("--tensor-model-parallel-size 1 --context-parallel-size 8 --cp-comm-type "
                        "all_gather p2p all_gather p2p") +
                kSeq);
  // One comm type for both kinds: one value.
  EXPECT_EQ(RunModelIn(Framework::kMegatron, gather, Causal(), nullptr, &window, job).settings,
            std::string("--tensor-model-parallel-size 1 --context-parallel-size 8 --cp-comm-type "
                        "all_gather") +
                kSeq);
  // The hierarchical sizes stay beside a list holding a2a+p2p.
  const SchemeParams usp = Plan("usp", Layout::kZigzag, 4, 2, {"ulysses", "ring"});
  EXPECT_EQ(RunModelIn(Framework::kMegatron, usp, Causal(), &gather, &window, job).settings,
            std::string("--tensor-model-parallel-size 1 --context-parallel-size 8 --cp-comm-type "
                        "all_gather a2a+p2p all_gather a2a+p2p "
                        "--hierarchical-context-parallel-sizes 4 2") +
                kSeq);
}

TEST(Frameworks, MegatronSaysItDropsSoftCapping) {
  FrameworkJob job = Job(8);
  const SchemeParams ring = Plan("ring", Layout::kZigzag, 1, 8, {"cp"});
  EXPECT_EQ(RunModelIn(Framework::kMegatron, ring, Causal(), nullptr, nullptr, job).note, "");
  job.logit_softcapping = true;
  const FrameworkRun capped =
      RunModelIn(Framework::kMegatron, ring, Causal(), nullptr, nullptr, job);
  EXPECT_NE(capped.note.find("attn_logit_softcapping is dropped"), std::string::npos);
  EXPECT_EQ(capped.why_not, "");
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

// Packed documents run in TransformerEngine's THD format (d0067d0, context_parallel.cu,
// thd_partition_src_index: each document in 2 x CP chunks) on p2p, all_gather and a2a; Megatron
// pads each document to 2 x CP, x TP with sequence parallelism (Megatron-LM d98e8a6,
// megatron/core/models/multimodal/context_parallel.py, padding_factor).
TEST(Frameworks, MegatronRunsPackedDocumentsSplitPerDocument) {
  const auto m = Framework::kMegatron;
  Workload docs = WithSeq(Causal(), 1024);
  docs.mask = Mask::Documents({256, 512, 256});  // multiples of 2 x 8 x 2 = 32
  // The ring and all_gather run doc-zigzag, not the whole sequence's zigzag.
  EXPECT_EQ(RunIn(m, Plan("ring", Layout::kDocZigzag, 1, 8, {"cp"}), docs, 8).why_not, "");
  EXPECT_EQ(RunIn(m, Plan("allgather-kv", Layout::kDocZigzag, 1, 8, {"cp"}), docs, 8).why_not, "");
  const std::string zigzag = RunIn(m, Plan("ring", Layout::kZigzag, 1, 8, {"cp"}), docs, 8).why_not;
  EXPECT_NE(zigzag.find("THD format"), std::string::npos) << zigzag;
  EXPECT_NE(zigzag.find("doc-zigzag"), std::string::npos) << zigzag;
  // a2a gathers whole sequences of its heads: its layout is contiguous.
  EXPECT_EQ(
      RunIn(m, Plan("ulysses", Layout::kContiguous, 8, 1, {"ulysses"}, true), docs, 8).why_not, "");
  // With TP 4 the multiple is 2 x 8 x 4 = 64, which 256 and 512 are. An 80-token document is a
  // multiple of 2 x 8 = 16 (TP 1) but not of 2 x 8 x 2 = 32 (TP 2).
  EXPECT_EQ(RunIn(m, Plan("ring", Layout::kDocZigzag, 1, 8, {"cp"}), docs, Job(8, 4)).why_not, "");
  Workload odd = WithSeq(Causal(), 1024);
  odd.mask = Mask::Documents({80, 688, 256});
  EXPECT_EQ(RunIn(m, Plan("ring", Layout::kDocZigzag, 1, 8, {"cp"}), odd, 8).why_not, "");
  const std::string tp2 =
      RunIn(m, Plan("ring", Layout::kDocZigzag, 1, 8, {"cp"}), odd, Job(8, 2)).why_not;
  EXPECT_NE(tp2.find("2 x CP x TP = 32"), std::string::npos) << tp2;
  EXPECT_NE(tp2.find("document 1 (tokens 0..) has 80"), std::string::npos) << tp2;
  // Masks TE's context parallelism does not take stay refused.
  Workload prefix = WithSeq(Causal(), 1024);
  prefix.mask = Mask::Prefix(100);
  EXPECT_NE(RunIn(m, Plan("ring", Layout::kZigzag, 1, 8, {"cp"}), prefix, 8).why_not, "");
}

TEST(Frameworks, YunchangNamesItsRingImplementations) {
  const auto y = Framework::kYunchang;
  EXPECT_EQ(
      RunIn(y, Plan("usp", Layout::kStriped, 4, 2, {"ulysses", "ring"}), Causal(), 8).settings,
      "set_seq_parallel_pg(4, 2, rank, world_size, use_ulysses_low=True); "
      "LongContextAttention(ring_impl_type=\"strip\"); "
      "inputs: EXTRACT_FUNC_DICT[\"strip\"](x, rank, world_size, rd=2, ud=4)");
  EXPECT_EQ(RunIn(y, Plan("ring", Layout::kContiguous, 1, 8, {"cp"}), Causal(), 8).settings,
            "set_seq_parallel_pg(1, 8, rank, world_size, use_ulysses_low=True); "
            "LongContextAttention(ring_impl_type=\"basic\"); "
            "inputs: EXTRACT_FUNC_DICT[\"basic\"](x, rank, world_size, rd=8, ud=1)");
  // zigzag and strip assert causal; use_ulysses_low=False is right only for zigzag.
  Workload full = Causal();
  full.mask = Mask::Full();
  EXPECT_NE(RunIn(y, Plan("ring", Layout::kZigzag, 1, 8, {"cp"}), full, 8).why_not, "");
  EXPECT_NE(RunIn(y, Plan("usp", Layout::kStriped, 4, 2, {"ring", "ulysses"}), Causal(), 8).why_not,
            "");
  EXPECT_EQ(RunIn(y, Plan("usp", Layout::kZigzag, 4, 2, {"ring", "ulysses"}), Causal(), 8).settings,
            "set_seq_parallel_pg(4, 2, rank, world_size, use_ulysses_low=False); "
            "LongContextAttention(ring_impl_type=\"zigzag\"); "
            "inputs: EXTRACT_FUNC_DICT[\"zigzag\"](x, rank, world_size, rd=2, ud=4)");
}

TEST(Frameworks, YunchangShardsEachSequenceGroupBesideDataParallelism) {
  // DP 2 x SP 8: set_seq_parallel_pg puts each replica's 8 ranks together (offset dp_rank x 8),
  // as meshplan lays DP outermost; the extractors take the rank within the group and its size.
  const FrameworkRun run =
      RunIn(Framework::kYunchang, Plan("usp", Layout::kZigzag, 4, 2, {"ulysses", "ring"}), Causal(),
            Job(8, 1, 2));
  EXPECT_EQ(run.settings,
            "set_seq_parallel_pg(4, 2, rank, world_size, use_ulysses_low=True); "
            "LongContextAttention(ring_impl_type=\"zigzag\"); "
            "inputs: EXTRACT_FUNC_DICT[\"zigzag\"](x, rank % 8, 8, rd=2, ud=4)");
}

TEST(Frameworks, YunchangBesideTensorParallelismBuildsItsGroupsByHand) {
  // TP 8 x CP 32 on 256 GPUs: the timed CP group of TP rank t is t, t + 8, ..., t + 248; Ulysses
  // 4 innermost: groups sp[0:4], sp[4:8], ... (8 of them), rings sp[0::4] .. sp[3::4] (4).
  const FrameworkRun run =
      RunIn(Framework::kYunchang, Plan("usp", Layout::kZigzag, 4, 8, {"ulysses", "ring"}), Causal(),
            Job(32, 8));
  EXPECT_EQ(run.settings,
            "not set_seq_parallel_pg (it groups consecutive ranks, which are one TP group's): "
            "for t in range(8): sp = [t + 8*i for i in range(32)]; "
            "torch.distributed.new_group(sp[j*4:(j+1)*4]) for j in range(8) and "
            "new_group(sp[k::4]) for k in range(4); set yunchang.globals.PROCESS_GROUP.ULYSSES_PG "
            "to this rank's first kind and PROCESS_GROUP.RING_PG to its second; "
            "LongContextAttention(ring_impl_type=\"zigzag\"); "
            "inputs: EXTRACT_FUNC_DICT[\"zigzag\"](x, sp.index(rank), 32, rd=8, ud=4)");
  // With DP 2 the replica's offset d x 256 comes first.
  const FrameworkRun dp = RunIn(Framework::kYunchang, Plan("ring", Layout::kZigzag, 1, 4, {"cp"}),
                                Causal(), Job(4, 2, 2));
  EXPECT_NE(dp.settings.find("for d in range(2) for t in range(2): sp = [d*8 + t + 2*i for i in "
                             "range(4)]"),
            std::string::npos)
      << dp.settings;
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

TEST(Frameworks, InternEvoRunsPlainIspAndOneRing) {
  const auto i = Framework::kInternEvo;
  // hp = P: plain ISP, tensor.size the 16 GPUs and no sequence_2D.
  EXPECT_EQ(RunIn(i, Plan("loongtrain", Layout::kContiguous, 16, 1, {"head", "inner", "outer"}),
                  Causal(), 16)
                .settings,
            "parallel = dict(tensor=dict(size=16, mode=\"isp\"))");
  // One ring: window_size = context_size (InternEvo's window_size=1 runs the same single ring).
  EXPECT_EQ(
      RunIn(i, Plan("loongtrain", Layout::kZigzag, 2, 8, {"head", "inner", "outer"}, false, 8),
            Causal(), 16)
          .why_not,
      "");
}

TEST(Frameworks, InternEvoHasNoTensorParallelismBesideItsSequences) {
  // TP 8 x CP 32: InternEvo's tensor.size under isp is the sequence degree, so no config of it
  // runs 8 heads per GPU on 32-GPU sequence groups.
  for (const SchemeParams& p :
       {Plan("loongtrain", Layout::kZigzag, 2, 16, {"head", "inner", "outer"}, false, 4),
        Plan("loongtrain", Layout::kContiguous, 32, 1, {"head", "inner", "outer"})}) {
    const FrameworkRun run = RunIn(Framework::kInternEvo, p, Causal(), Job(32, 8));
    EXPECT_NE(run.why_not.find("tensor.size is the sequence-parallel degree"), std::string::npos)
        << run.why_not;
    EXPECT_FALSE(run.variant);
  }
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
