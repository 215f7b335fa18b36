// The execution engine (executor/device/device_engine.h) on the host backend (host_device_ops.h,
// real asynchronous streams): every scheme's schedule, issued in launch order with bf16 inputs,
// computes exact attention. Expected values: plain double-precision attention
// (executor/kernels/reference.h) on the same bf16-rounded inputs, so the only error left is fp32
// arithmetic: max relative error below 1e-5, as for the CPU executor. Outputs start as NaN so an
// element no rank wrote fails the check. The same engine then runs with one engine per emulated
// process (threads joined by in-process transports, as MPI or NCCL join processes), which exercises
// the host-side tracking of remote ranks. Every run checks happens-before
// (RunOptions::check_dependencies).
#include "executor/device/device_engine.h"

#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "executor/device/half_float.h"
#include "executor/device/host_device_ops.h"
#include "executor/execute.h"
#include "executor/gather.h"
#include "executor/kernels/reference.h"
#include "executor/transport/thread_transport.h"
#include "planner/schemes/registry.h"
#include "planner/strategy.h"
#include "tests/executor/scheme_cases.h"

namespace meshplan::exec {
namespace {

struct Prepared {
  Workload w;
  Schedule schedule;
  AttentionTensors<double> ref;
  AttentionTensors<float> in;
  std::string what;
};

// Builds the case's schedule and bf16-rounded inputs with their reference outputs.
std::optional<Prepared> Prepare(const Case& c, Pass pass, uint64_t seed, InputType type) {
  Prepared out;
  Workload& w = out.w;
  w.batch = c.batch;
  w.seq_len = 192;
  w.q_heads = c.hq;
  w.kv_heads = c.hkv;
  w.head_dim = 16;
  w.mask = c.mask;
  w.pass = pass;
  EXPECT_TRUE(w.Validate().ok());
  const Topology topology = Cluster(c.gpus);
  const planner::PlanContext ctx(w, topology);
  SchemeParams p = c.params;
  if (p.placement.empty()) p.placement = CanonicalPlacement(planner::RankDims(p));
  const auto strategy = planner::MakeStrategy(p.scheme);
  out.what = std::string(SchemeName(p.scheme)) + " " + planner::DescribeParams(p) +
             " P=" + std::to_string(c.gpus) + " " + w.Describe() + " seed=" + std::to_string(seed);
  const planner::Estimate e = strategy->Evaluate(ctx, p);
  EXPECT_TRUE(e.valid) << out.what << ": " << e.reason;
  auto schedule = strategy->Expand(ctx, p);
  EXPECT_TRUE(schedule.ok()) << out.what;
  if (!e.valid || !schedule.ok()) return std::nullopt;
  out.schedule = std::move(*schedule);
  out.ref = RandomInputs(w, seed);
  for (TensorD* t : {&out.ref.q, &out.ref.k, &out.ref.v, &out.ref.d_o}) {
    for (double& x : t->data) x = RoundToInput(type, static_cast<float>(x));
  }
  ReferenceForward(w, out.ref);
  if (HasBackward(pass)) ReferenceBackward(w, out.ref);
  out.in.q = ToFloat(out.ref.q);
  out.in.k = ToFloat(out.ref.k);
  out.in.v = ToFloat(out.ref.v);
  out.in.d_o = ToFloat(out.ref.d_o);
  return out;
}

AttentionTensors<float> PoisonedOutputs(const Workload& w) {
  AttentionTensors<float> out = OutputTensors(w);
  for (TensorF* t : {&out.o, &out.lse, &out.dq, &out.dk, &out.dv})
    std::fill(t->data.begin(), t->data.end(), NAN);
  return out;
}

void ExpectMatches(const Prepared& p, const AttentionTensors<float>& got, double tolerance) {
  EXPECT_LT(MaxRelativeError(got.o, p.ref.o), tolerance) << "O " << p.what;
  EXPECT_LT(MaxRelativeError(got.lse, p.ref.lse), tolerance) << "LSE " << p.what;
  if (HasBackward(p.w.pass)) {
    EXPECT_LT(MaxRelativeError(got.dq, p.ref.dq), tolerance) << "dQ " << p.what;
    EXPECT_LT(MaxRelativeError(got.dk, p.ref.dk), tolerance) << "dK " << p.what;
    EXPECT_LT(MaxRelativeError(got.dv, p.ref.dv), tolerance) << "dV " << p.what;
  }
}

// One process running every rank (virtual ranks on one device).
void RunAllLocal(const Prepared& p, InputType type) {
  HostDeviceOps ops(p.w);
  {
    RunOptions options;
    options.type = type;
    options.check_dependencies = true;
    DeviceEngine engine(p.schedule, p.w, options, ops,
                        std::vector<uint8_t>(p.schedule.num_ranks, 1));
    ASSERT_TRUE(engine.LoadInputs(TensorInputSource(p.in)).ok()) << p.what;
    auto run = engine.Run();
    ASSERT_TRUE(run.ok()) << p.what << ": " << run.status().message();
    ASSERT_EQ(run->times.size(), static_cast<size_t>(p.schedule.num_ranks));
    for (int64_t r = 0; r < p.schedule.num_ranks; ++r) {
      ASSERT_EQ(run->times[r].size(), p.schedule.ranks[r].ops.size()) << p.what;
      for (const OpTiming& t : run->times[r]) ASSERT_LE(t.start_s, t.end_s) << p.what;
    }
    AttentionTensors<float> out = PoisonedOutputs(p.w);
    std::vector<uint8_t> covered(CoverageSize(p.w), 0);
    ASSERT_TRUE(engine.CollectOutputs(&out, &covered).ok()) << p.what;
    const Status coverage = CheckCoverage(p.w, covered);
    ASSERT_TRUE(coverage.ok()) << p.what << ": " << coverage.message();
    ExpectMatches(p, out, 1e-5);
  }
  // Every buffer the engine allocated was freed once it went away.
  for (int64_t r = 0; r < p.schedule.num_ranks; ++r)
    EXPECT_EQ(ops.live_bytes(static_cast<int32_t>(r)), 0) << p.what;
}

class DeviceEngineNumerics : public ::testing::TestWithParam<int64_t> {};

TEST_P(DeviceEngineNumerics, EverySchemeMatchesPlainAttentionOnBf16) {
  const int64_t P = GetParam();
  std::mt19937_64 seeds(4321 + P);
  for (const Mask& mask : Masks()) {
    for (const Case& c : SchemeCases(P, mask)) {
      for (Pass pass : {Pass::kForward, Pass::kForwardBackward}) {
        auto p = Prepare(c, pass, seeds(), InputType::kBf16);
        ASSERT_TRUE(p.has_value());
        RunAllLocal(*p, InputType::kBf16);
        if (HasFailure()) return;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, DeviceEngineNumerics, ::testing::Values(1, 2, 4, 6, 8));

TEST(DeviceEngine, Fp16InputsMatchTheReferenceOnTheirRoundedValues) {
  std::mt19937_64 seeds(99);
  for (const Case& c : SchemeCases(4, Mask::Causal())) {
    auto p = Prepare(c, Pass::kForwardBackward, seeds(), InputType::kFp16);
    ASSERT_TRUE(p.has_value());
    RunAllLocal(*p, InputType::kFp16);
    if (HasFailure()) return;
  }
}

// Ring over 8 ranks moves every K,V shard through every rank; buffers released as the ring
// advances keep each rank's peak far below holding the whole sequence's K and V.
TEST(DeviceEngine, ReleasesBuffersDuringTheRun) {
  Case c{8, Params(Scheme("ring"), Layout::kContiguous), Mask::Full(), 4, 4, 1};
  c.params.ring = 8;
  auto p = Prepare(c, Pass::kForward, 7, InputType::kBf16);
  ASSERT_TRUE(p.has_value());
  HostDeviceOps ops(p->w);
  RunOptions bf16;
  bf16.type = InputType::kBf16;
  DeviceEngine engine(p->schedule, p->w, bf16, ops, std::vector<uint8_t>(8, 1));
  ASSERT_TRUE(engine.LoadInputs(TensorInputSource(p->in)).ok());
  auto run = engine.Run();
  ASSERT_TRUE(run.ok()) << run.status().message();
  // Whole-sequence K and V in bf16: 2 tensors x 192 tokens x 4 heads x 16 x 2 bytes = 49152 B.
  // One shard of them is 6144 B; a rank holding every shard at once would need all 49152 B.
  const int64_t all_kv = 2 * 192 * 4 * 16 * 2;
  for (int64_t r = 0; r < 8; ++r) EXPECT_LT(run->peak_bytes[r], all_kv / 2) << "rank " << r;
}

// One engine per emulated process, each running one rank and tracking the others' metadata.
void RunOneRankPerProcess(const Prepared& p) {
  const int ranks = static_cast<int>(p.schedule.num_ranks);
  auto transports = MakeThreadTransports(ranks);
  std::vector<AttentionTensors<float>> outs(ranks);
  std::vector<std::vector<uint8_t>> covered(ranks, std::vector<uint8_t>(CoverageSize(p.w), 0));
  std::vector<Status> status(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      HostDeviceOps ops(p.w, {transports[r].get()});
      std::vector<uint8_t> local(ranks, 0);
      local[r] = 1;
      RunOptions options;
      options.type = InputType::kBf16;
      options.check_dependencies = true;
      DeviceEngine engine(p.schedule, p.w, options, ops, local);
      status[r] = engine.LoadInputs(TensorInputSource(p.in));
      if (!status[r].ok()) return;
      auto run = engine.Run();
      if (!run.ok()) {
        status[r] = run.status();
        transports[r]->Abort(status[r]);
        return;
      }
      outs[r] = OutputTensors(p.w);
      status[r] = engine.CollectOutputs(&outs[r], &covered[r]);
    });
  }
  for (auto& t : threads) t.join();
  AttentionTensors<float> merged = PoisonedOutputs(p.w);
  std::vector<uint8_t> all(CoverageSize(p.w), 0);
  for (int r = 0; r < ranks; ++r) {
    ASSERT_TRUE(status[r].ok()) << p.what << " rank " << r << ": " << status[r].message();
    // Copy what rank r produced (its covered elements) into the merged outputs.
    const size_t cells = static_cast<size_t>(p.w.batch * p.w.seq_len * p.w.q_heads);
    TensorF* mine[] = {&outs[r].o, &outs[r].lse, &outs[r].dq, &outs[r].dk, &outs[r].dv};
    TensorF* dst[] = {&merged.o, &merged.lse, &merged.dq, &merged.dk, &merged.dv};
    for (size_t t = 0; t < 5; ++t) {
      const int64_t heads = dst[t]->heads, dim = dst[t]->dim;
      for (size_t cell = 0; cell < cells; ++cell) {
        if (!covered[r][t * cells + cell]) continue;
        all[t * cells + cell] = 1;
        const int64_t h = static_cast<int64_t>(cell % static_cast<size_t>(p.w.q_heads));
        const int64_t bs = static_cast<int64_t>(cell / static_cast<size_t>(p.w.q_heads));
        for (int64_t e = 0; e < dim; ++e)
          dst[t]->data[(bs * heads + h) * dim + e] = mine[t]->data[(bs * heads + h) * dim + e];
      }
    }
  }
  const Status coverage = CheckCoverage(p.w, all);
  ASSERT_TRUE(coverage.ok()) << p.what << ": " << coverage.message();
  ExpectMatches(p, merged, 1e-5);
}

TEST(DeviceEngine, OneRankPerProcessTracksRemoteRanksAndMatches) {
  std::mt19937_64 seeds(17);
  for (const Mask& mask : {Mask::Causal(), Mask::Documents({30, 5, 97, 60})}) {
    for (const Case& c : SchemeCases(4, mask)) {
      auto p = Prepare(c, Pass::kForwardBackward, seeds(), InputType::kBf16);
      ASSERT_TRUE(p.has_value());
      RunOneRankPerProcess(*p);
      if (HasFailure()) return;
    }
  }
}

}  // namespace
}  // namespace meshplan::exec

namespace meshplan::exec {
namespace {

TEST(DeviceEngine, InjectedFailureNamesTheRankAndOp) {
  Case c{4, Params(Scheme("mesh"), Layout::kZigzag), Mask::Causal(), 4, 4, 1};
  c.params.tile_a = 2;
  c.params.tile_b = 2;
  auto p = Prepare(c, Pass::kForward, 3, InputType::kBf16);
  ASSERT_TRUE(p.has_value());
  // Fail a compute op (local step) and a message (exchange step) of rank 2.
  for (OpKind kind : {OpKind::kCompute, OpKind::kSend}) {
    int64_t index = -1;
    for (size_t i = 0; i < p->schedule.ranks[2].ops.size() && index < 0; ++i) {
      if (p->schedule.ranks[2].ops[i].kind == kind) index = static_cast<int64_t>(i);
    }
    ASSERT_GE(index, 0);
    HostDeviceOps ops(p->w);
    RunOptions options;
    options.type = InputType::kBf16;
    options.fail_rank = 2;
    options.fail_op = index;
    DeviceEngine engine(p->schedule, p->w, options, ops, std::vector<uint8_t>(4, 1));
    ASSERT_TRUE(engine.LoadInputs(TensorInputSource(p->in)).ok());
    auto run = engine.Run();
    ASSERT_FALSE(run.ok());
    const std::string expected =
        "rank 2 op " + std::to_string(index) + " (fwd " + std::string(OpKindName(kind)) + ")";
    EXPECT_NE(run.status().message().find(expected), std::string::npos) << run.status().message();
    EXPECT_NE(run.status().message().find("injected failure"), std::string::npos)
        << run.status().message();
  }
}

}  // namespace
}  // namespace meshplan::exec
