// The happens-before checker (RunOptions::check_dependencies) on schedules with a planted missing
// dependency: a send that hands over a partial (dK, dV of the ring's backward) loses its
// dependency on the compute op that produced it. On a device the send's stream would then read
// the partial while the compute stream may still write it. Depending on where the launch order
// issues the send, either the host side issues it after its producer (the checker must then fail
// the run naming the send, the buffer and the writer) or before it (the send finds no partial
// and hands over zeros: the result must then differ from the correct one). Every such send of
// the schedule is planted in turn; at least one must be the checker's case.
#include <gtest/gtest.h>

#include <algorithm>

#include "executor/device/op_tensors.h"
#include "executor/execute.h"
#include "executor/kernels/reference.h"
#include "planner/schemes/registry.h"
#include "planner/strategy.h"
#include "tests/executor/scheme_cases.h"

namespace meshplan::exec {
namespace {

struct Planted {
  int32_t rank;
  uint32_t send;      // the send whose deps were removed
  uint32_t producer;  // the compute op it depended on
};

// Removes every dep of `send`.
Schedule Plant(const Schedule& s, const Planted& p) {
  Schedule out = s;
  out.ranks[p.rank].ops[p.send].dep_count = 0;
  return out;
}

TEST(DependencyCheck, NamesTheOpAndBufferOfAPlantedMissingDependency) {
  Workload w;
  w.seq_len = 64;
  w.q_heads = 2;
  w.kv_heads = 2;
  w.head_dim = 8;
  w.dtype = DType::kFp32;
  w.mask = Mask::Full();
  w.pass = Pass::kForwardBackward;
  ASSERT_TRUE(w.Validate().ok());
  const Topology topology = Cluster(4);
  const planner::PlanContext ctx(w, topology);
  SchemeParams p = Params(Scheme("ring"), Layout::kContiguous);
  p.ring = 4;
  p.placement = CanonicalPlacement(planner::RankDims(p));
  auto schedule = planner::MakeStrategy(p.scheme)->Expand(ctx, p);
  ASSERT_TRUE(schedule.ok()) << schedule.status().message();
  const AttentionTensors<double> d = RandomInputs(w, 3);
  AttentionTensors<float> in;
  in.q = ToFloat(d.q);
  in.k = ToFloat(d.k);
  in.v = ToFloat(d.v);
  in.d_o = ToFloat(d.d_o);
  ExecuteConfig config;
  config.transport = TransportKind::kLocal;
  config.run.check_dependencies = true;
  config.run.recv_timeout = std::chrono::milliseconds(5000);
  // The unmodified schedule passes the check.
  auto clean = Execute(*schedule, w, in, config);
  ASSERT_TRUE(clean.ok()) << clean.status().message();

  constexpr uint16_t kPartials = kTensorO | kTensorDQ | kTensorDK | kTensorDV;
  int caught = 0, planted = 0;
  for (int32_t r = 0; r < schedule->num_ranks; ++r) {
    const RankProgram& program = schedule->ranks[r];
    for (uint32_t i = 0; i < program.ops.size(); ++i) {
      const Op& op = program.ops[i];
      if (op.kind != OpKind::kSend || !(op.tensors & kPartials) || op.dep_count == 0) continue;
      const uint32_t producer = program.deps[op.dep_begin];
      if (program.ops[producer].kind != OpKind::kCompute) continue;
      ++planted;
      const Schedule broken = Plant(*schedule, {r, i, producer});
      auto run = Execute(broken, w, in, config);
      const std::string what = "rank " + std::to_string(r) + " op " + std::to_string(i);
      if (run.ok()) {
        // Issued before its producer: zeros were handed over, and the result shows it.
        const double worst =
            std::max({MaxRelativeError(run->outputs.dk, ToDouble(clean->outputs.dk)),
                      MaxRelativeError(run->outputs.dv, ToDouble(clean->outputs.dv)),
                      MaxRelativeError(run->outputs.o, ToDouble(clean->outputs.o))});
        EXPECT_GT(worst, 1e-3) << what << ": a missing dependency went unnoticed";
        continue;
      }
      const std::string& m = run.status().message();
      ASSERT_NE(m.find("dependency check"), std::string::npos) << what << ": " << m;
      ++caught;
      EXPECT_NE(m.find(what + " (bwd send) reads "), std::string::npos) << m;
      bool names_buffer = false;  // one of the tensors it sends, of the shard it names for them
      for (uint16_t bit : TensorBitsOf(op.tensors)) {
        const std::string buffer =
            "reads " + TensorNames(bit) + " of shard " + std::to_string(ShardOf(op, bit));
        names_buffer = names_buffer || m.find(buffer) != std::string::npos;
      }
      EXPECT_TRUE(names_buffer) << m;
      EXPECT_NE(m.find("written by op "), std::string::npos) << m;
    }
  }
  EXPECT_GT(planted, 0);
  EXPECT_GT(caught, 0) << "no planted missing dependency was caught out of " << planted;
}

}  // namespace
}  // namespace meshplan::exec
