// The pipeline's stage-to-stage traffic in the step's time: exposed in full without the
// interleaved schedule's overlap, hidden behind the model chunks' compute with it.
#include "step/step_time.h"

#include <gtest/gtest.h>

#include <string>

#include "core/cluster/topology_toml.h"

namespace meshplan::step {
namespace {

// h 1024, 8 heads of 128 (no GQA), gated MLP of 4096, 8 layers, vocab 32000, untied.
ModelConfig EightLayerModel() {
  ModelConfig m;
  m.name = "eight-layer";
  m.q_heads = 8;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.layers = 8;
  m.hidden_size = 1024;
  m.intermediate_size = 4096;
  m.vocab_size = 32000;
  m.tied_embeddings = false;
  return m;
}

// Two nodes of one H100 each; `link_gbps` between them, the only link a pipeline of 2 crosses.
Topology TwoNodes(double link_gbps) {
  const std::string text = R"(name = "two-nodes"
[gpu]
catalog = "h100-sxm5"
[[level]]
name = "pcie"
kind = "switch"
group_size = 1
bandwidth_GBps = 50
latency_us = 1
[[level]]
name = "net"
kind = "switch"
group_size = 2
bandwidth_GBps = )" + std::to_string(link_gbps) +
                           R"(
latency_us = 5
)";
  auto topology = ParseTopologyToml(text, "two-nodes.toml");
  EXPECT_TRUE(topology.ok()) << topology.status().message();
  return *topology;
}

StepOptions Pipeline(int64_t vpp, bool overlap) {
  StepOptions o;
  o.pp = 2;
  o.vpp = vpp;
  o.global_batch = 8;  // 8 micro-batches of one sequence
  o.overlap_p2p_comm = overlap;
  return o;
}

double ComputeSeconds(const StepTime& t) {
  return t.attention_s + t.gemm_s + t.elementwise_s + t.tp_comm_s + t.recompute_s;
}

TEST(StepTimePipeline, InterleavedCrossingsHideBehindLongerChunks) {
  // 4096 tokens x 1024 x 2 bytes = 8 MiB a crossing over 50 GB/s: 0.17 ms. The attention alone
  // (0.4 s forward, 1 s forward and backward for the stage's 4 layers) makes every chunk (a
  // quarter of a stage's forward or backward with vpp 2 over 2 stages' 8 layers: 2 layers) at
  // least 0.1 s: every crossing hides.
  const Topology cluster = TwoNodes(50);
  const AttentionSeconds attention{2.0, 0.8};  // all 8 layers; a stage runs half
  const StepTime hidden = TimeStep(EightLayerModel(), Pipeline(2, true), cluster, 4096, attention);
  EXPECT_EQ(hidden.pp_p2p_s, 0);
  // Without the overlap each micro-batch crosses 2 x vpp = 4 times, one shift each: 8 micro-
  // batches x 4 x (8 MiB / 50 GB/s + latency) is at least 5.3 ms.
  const StepTime exposed =
      TimeStep(EightLayerModel(), Pipeline(2, false), cluster, 4096, attention);
  EXPECT_GE(exposed.pp_p2p_s, 8 * 4 * (8.0 * 1024 * 1024 / 50e9));
  // The rest of the step is the same work.
  EXPECT_DOUBLE_EQ(exposed.gemm_s, hidden.gemm_s);
  EXPECT_DOUBLE_EQ(exposed.attention_s, hidden.attention_s);
}

TEST(StepTimePipeline, LongCrossingsShowWhatTheChunksDoNotCover) {
  // Over 0.001 GB/s a crossing of 8 MiB takes 8.4 s, longer than any chunk of this small stage
  // (no attention): each of the 2 x vpp crossings of a micro-batch shows its time less its
  // chunk's, and the chunks of one micro-batch add up to the stage's forward and backward. So
  // the overlapped pipeline's traffic is the exposed one less the stage's whole compute.
  const Topology cluster = TwoNodes(0.001);
  const AttentionSeconds attention{0, 0};
  const StepTime exposed =
      TimeStep(EightLayerModel(), Pipeline(2, false), cluster, 4096, attention);
  const StepTime overlapped =
      TimeStep(EightLayerModel(), Pipeline(2, true), cluster, 4096, attention);
  ASSERT_GT(exposed.pp_p2p_s, 8 * 4 * 8.0);  // 8 micro-batches x 4 crossings of over 8 s
  EXPECT_NEAR(overlapped.pp_p2p_s, exposed.pp_p2p_s - ComputeSeconds(exposed),
              1e-9 * exposed.pp_p2p_s);
  EXPECT_GT(ComputeSeconds(exposed), 0);
}

TEST(StepTimePipeline, WithoutInterleavingNothingOverlaps) {
  // Megatron turns overlap_p2p_comm off without virtual stages (arguments.py at d98e8a6, lines
  // 1010-1012): the flag changes nothing at vpp 1, where 2 crossings a micro-batch show in full.
  const Topology cluster = TwoNodes(50);
  const AttentionSeconds attention{2.0, 0.8};
  const StepTime on = TimeStep(EightLayerModel(), Pipeline(1, true), cluster, 4096, attention);
  const StepTime off = TimeStep(EightLayerModel(), Pipeline(1, false), cluster, 4096, attention);
  EXPECT_GT(on.pp_p2p_s, 0);
  EXPECT_DOUBLE_EQ(on.pp_p2p_s, off.pp_p2p_s);
  EXPECT_FALSE(Pipeline(1, true).p2p_overlapped());
  EXPECT_TRUE(Pipeline(2, true).p2p_overlapped());
}

TEST(StepTimeKernelRate, HalfTheRateStretchesKernelsNotTraffic) {
  // A GPU whose whole steps sustain half its kernels' rates alone: every kernel term (attention,
  // GEMMs, element-wise, optimizer) takes twice as long; the pipeline's traffic without overlap
  // (vpp 1) and the TP collectives are links' time and stay.
  Topology full = TwoNodes(50);
  full.gpu.step_kernel_rate_fraction = 1.0;  // the catalog's H100 states its own
  Topology half = full;
  half.gpu.step_kernel_rate_fraction = 0.5;
  const AttentionSeconds attention{2.0, 0.8};
  const StepTime a = TimeStep(EightLayerModel(), Pipeline(1, false), full, 4096, attention);
  const StepTime b = TimeStep(EightLayerModel(), Pipeline(1, false), half, 4096, attention);
  EXPECT_DOUBLE_EQ(a.attention_s, 8 * 1.0);  // 8 micro-batches x the stage's half of 2 s
  EXPECT_DOUBLE_EQ(b.attention_s, 2 * a.attention_s);
  EXPECT_DOUBLE_EQ(b.gemm_s, 2 * a.gemm_s);
  EXPECT_DOUBLE_EQ(b.elementwise_s, 2 * a.elementwise_s);
  EXPECT_DOUBLE_EQ(b.optimizer_s, 2 * a.optimizer_s);
  EXPECT_DOUBLE_EQ(b.pp_p2p_s, a.pp_p2p_s);
  EXPECT_DOUBLE_EQ(b.tp_comm_s, a.tp_comm_s);
}

}  // namespace
}  // namespace meshplan::step
