#include "executor/host_memory.h"

#include <gtest/gtest.h>

namespace meshplan::exec {
namespace {

Workload Small(Pass pass, DType dtype) {
  Workload w;
  w.batch = 1;
  w.seq_len = 1024;
  w.q_heads = 4;
  w.kv_heads = 2;
  w.head_dim = 16;
  w.dtype = dtype;
  w.mask = Mask::Causal();
  w.pass = pass;
  return w;
}

TEST(EstimateHostMemory, PhasesByHand) {
  // B=1, S=1024, Hq=4, Hkv=2, d=16: q-sized tensors 65536 elements, kv-sized 32768, lse 4096.
  HostMemoryQuestion q;
  q.workload = Small(Pass::kForwardBackward, DType::kFp32);
  q.rank_peak_bytes = 1 << 20;
  q.ranks_in_process = 4;
  q.random_inputs = true;
  q.check = true;
  const HostMemoryNeed need = EstimateHostMemory(q);
  // Seeded inputs are generated per rank: no inputs phase, no whole inputs held while running.
  EXPECT_DOUBLE_EQ(need.inputs_phase_bytes, 0.0);
  // ranks: 1 MiB each (fp32 plan: no widening) x 4 = 4194304; float outputs o, lse, dq, dk, dv
  // (kept for the check): 4 (65536 + 4096 + 65536 + 2 x 32768) = 802816.
  EXPECT_DOUBLE_EQ(need.ranks_bytes, 4194304.0);
  // Coverage marks: 5 outputs x 1024 tokens x 4 heads = 20480 bytes.
  EXPECT_DOUBLE_EQ(need.run_phase_bytes, 4194304.0 + 20480.0 + 802816.0);
  // The check holds the whole float inputs q, k, v, dO: 4 (65536 + 2 x 32768 + 65536) = 786432,
  // the float outputs, and reference doubles q, k, v, o, lse, dO, dq, dk, dv: 8 (2 x 65536 +
  // 2 x 32768 + 4096 + 2 x 65536 + 2 x 32768) = 3178496.
  EXPECT_DOUBLE_EQ(need.check_phase_bytes, 786432.0 + 802816.0 + 3178496.0);
  EXPECT_DOUBLE_EQ(need.PeakBytes(), 4194304.0 + 20480.0 + 802816.0);

  // Without --check or --outputs the global outputs are never copied out: the run is the ranks.
  q.check = false;
  q.keep_outputs = false;
  EXPECT_DOUBLE_EQ(EstimateHostMemory(q).run_phase_bytes, 4194304.0 + 20480.0);
  q.check = true;
  q.keep_outputs = true;

  // A bf16 plan's per-rank memory is in 2-byte elements: the CPU runs fp32, twice that.
  q.workload.dtype = DType::kBf16;
  EXPECT_DOUBLE_EQ(EstimateHostMemory(q).ranks_bytes, 2 * 4194304.0);
  // Forward only, inputs from files, no check: float q, k, v = 4 (65536 + 65536) = 524288, plus
  // one file's float64 values while converted, 8 x 65536 = 524288; outputs o, lse = 4 (65536 +
  // 4096) = 278528; no check phase.
  q.workload = Small(Pass::kForward, DType::kFp32);
  q.random_inputs = false;
  q.check = false;
  const HostMemoryNeed fwd = EstimateHostMemory(q);
  EXPECT_DOUBLE_EQ(fwd.inputs_phase_bytes, 524288.0 + 524288.0);
  EXPECT_DOUBLE_EQ(fwd.run_phase_bytes, 524288.0 + 4194304.0 + 20480.0 + 278528.0);
  EXPECT_DOUBLE_EQ(fwd.check_phase_bytes, 0.0);
}

TEST(CheckHostMemory, RefusesWithTheNeedTheLimitAndASizeThatFits) {
  HostMemoryQuestion q;
  q.workload = Small(Pass::kForward, DType::kFp32);
  q.workload.seq_len = 65536;
  q.ranks_in_process = 2;
  HostMemoryNeed need;
  need.inputs_phase_bytes = 1 << 30;
  need.run_phase_bytes = 4.0 * (1 << 30);  // 4 GiB
  need.ranks_bytes = 3.0 * (1 << 30);
  EXPECT_TRUE(CheckHostMemory(need, q, 4.0 * (1 << 30), "test").ok());  // exactly the need fits
  EXPECT_TRUE(CheckHostMemory(need, q, 0, "test").ok());  // no limit known: not checked
  // A quarter of the need: 65536 x 1/4 = 16384 tokens = 16K.
  const Status s = CheckHostMemory(need, q, 1.0 * (1 << 30), "--max-memory 1G");
  EXPECT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(s.message(),
            "execute: this run needs about 4.00 GiB of host memory in this process (run 4.00 GiB, "
            "of which "
            "2 ranks 3.00 GiB) but 1.00 GiB is available "
            "(--max-memory 1G); a plan of about 16K tokens or fewer would fit (--max-memory "
            "overrides the limit)");
  // Below 1K tokens there is no size to suggest.
  EXPECT_NE(CheckHostMemory(need, q, 1 << 20, "t").message().find("even 1K tokens would not fit"),
            std::string::npos);
}

TEST(AvailableHostMemoryBytes, SomethingOnLinux) {
  // /proc/meminfo exists on every Linux this builds on; the value is positive and below 1 PiB.
  const double bytes = AvailableHostMemoryBytes();
  EXPECT_GT(bytes, 0);
  EXPECT_LT(bytes, 1e15);
}

}  // namespace
}  // namespace meshplan::exec
