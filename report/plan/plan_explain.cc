#include "report/plan/plan_explain.h"

#include <algorithm>
#include <sstream>

#include "core/base/units.h"
#include "planner/schemes/registry.h"
#include "report/format/text_table.h"
#include "report/plan/plan_report.h"

namespace meshplan::report {
namespace {

std::string_view PhaseName(Phase phase) { return phase == Phase::kForward ? "fwd" : "bwd"; }

void OpJson(const Op& op, size_t index, JsonWriter& j) {
  j.BeginObject();
  j.Key("index");
  j.Int(static_cast<long long>(index));
  j.Key("phase");
  j.String(PhaseName(op.phase));
  if (op.step >= 0) {
    j.Key("step");
    j.Int(op.step);
  }
  j.Key("kind");
  j.String(OpKindName(op.kind));
  if (op.kind == OpKind::kCompute) {
    j.Key("q_shard");
    j.Int(op.q_shard);
    j.Key("kv_shard");
    j.Int(op.kv_shard);
    j.Key("head_begin");
    j.Int(op.head_begin);
    j.Key("head_count");
    j.Int(op.head_count);
    j.Key("flops");
    j.Number(op.flops);
  } else {
    j.Key("tensors");
    j.String(TensorNames(op.tensors));
    if (op.kind == OpKind::kSend || op.kind == OpKind::kRecv) {
      j.Key("peer");
      j.Int(op.peer);
    }
    if (op.group >= 0) {
      j.Key("group");
      j.Int(op.group);
    }
    j.Key("bytes");
    j.Int(op.bytes);
  }
  j.EndObject();
}

}  // namespace

std::string PlanExplain(const planner::PlanContext& ctx, const planner::Estimate& e,
                        int plan_number, const Schedule* schedule) {
  std::ostringstream out;
  out << "plan #" << plan_number << ": " << SchemeName(e.params.scheme) << " "
      << planner::DescribeParams(e.params) << "\n";
  out << "  cluster:  " << ClusterLine(ctx) << "\n";
  out << "  workload: " << ctx.workload.Describe() << "\n\n";
  out << "communication per GPU: " << FormatBytes(e.bytes_per_rank) << " (forward "
      << FormatBytes(e.fwd_bytes_per_rank) << ", backward " << FormatBytes(e.bwd_bytes_per_rank)
      << ")\n";
  for (size_t l = 0; l < ctx.topology.levels.size() && l < e.level_bytes.size(); ++l) {
    out << "  over " << ctx.topology.levels[l].name << ": " << FormatBytes(e.level_bytes[l])
        << " (busiest GPU)\n";
  }
  out << "compute per GPU: " << Fixed(e.flops_max / 1e12, 2) << " TFLOP on the busiest GPU, mean "
      << Fixed(e.flops_mean / 1e12, 2) << " TFLOP (imbalance " << Fixed(e.imbalance(), 3) << "x)\n";
  out << "peak memory per GPU: " << FormatBytes(e.peak_memory_bytes) << " of "
      << FormatBytes(ctx.topology.gpu.memory_bytes) << (e.fits ? " (fits)" : " (DOES NOT FIT)")
      << (e.params.cache_forward ? "; forward tensors cached for the backward"
                                 : "; backward re-fetches Q/KV")
      << "\n\n";
  out << "time model (stage x count: compute | communication -> stage time):\n";
  for (const planner::TimeStage& s : e.stages) {
    out << "  " << s.label << " x" << s.count << ": " << FormatSeconds(s.compute_s) << " | "
        << FormatSeconds(s.comm_s) << (s.overlapped ? " overlapped" : " exposed") << " -> "
        << FormatSeconds(s.Seconds()) << "\n";
  }
  out << "  total " << FormatSeconds(e.time_s) << " = compute " << FormatSeconds(e.compute_s)
      << " + exposed communication " << FormatSeconds(e.exposed_comm_s) << "\n";
  if (schedule != nullptr && !schedule->ranks.empty()) {
    const RankProgram& r0 = schedule->ranks[0];
    out << "\nschedule: " << schedule->TotalOps() << " ops over " << schedule->num_ranks
        << " ranks; rank 0's first ops:\n";
    const size_t shown = std::min(r0.ops.size(), kExplainedOps);
    for (size_t i = 0; i < shown; ++i) {
      const Op& op = r0.ops[i];
      out << "  [" << i << "] " << (op.phase == Phase::kForward ? "fwd " : "bwd ");
      if (op.step >= 0) out << "step " << op.step << " ";
      out << OpKindName(op.kind);
      if (op.kind == OpKind::kCompute) {
        out << " Q" << op.q_shard << " x KV" << op.kv_shard << " heads " << op.head_begin << ".."
            << op.head_begin + op.head_count - 1 << " (" << Fixed(op.flops / 1e9, 1) << " GFLOP)";
      } else {
        out << " " << TensorNames(op.tensors);
        if (op.kind == OpKind::kSend) out << " -> rank " << op.peer;
        if (op.kind == OpKind::kRecv) out << " <- rank " << op.peer;
        if (op.group >= 0) out << " group " << op.group;
        if (op.bytes > 0) out << " " << FormatBytes(static_cast<double>(op.bytes));
      }
      out << "\n";
    }
    if (shown < r0.ops.size()) out << "  ... " << r0.ops.size() - shown << " more ops\n";
  } else {
    out << "\nschedule: not expanded here for " << ctx.num_ranks
        << " ranks (the listing is limited to small clusters)\n";
  }
  return out.str();
}

void PlanExplainJson(const planner::PlanContext& ctx, const planner::Estimate& e, int plan_number,
                     const Schedule* schedule, JsonWriter& j) {
  j.BeginObject();
  j.Key("rank");
  j.Int(plan_number);
  j.Key("scheme");
  j.String(SchemeName(e.params.scheme));
  j.Key("parameters");
  j.String(planner::DescribeParams(e.params));

  j.Key("communication");
  j.BeginObject();
  j.Key("bytes_per_gpu");
  j.Bytes(e.bytes_per_rank);
  j.Key("forward_bytes_per_gpu");
  j.Bytes(e.fwd_bytes_per_rank);
  j.Key("backward_bytes_per_gpu");
  j.Bytes(e.bwd_bytes_per_rank);
  j.Key("bytes_per_gpu_by_level");  // the busiest GPU over each level
  j.BeginObject();
  for (size_t l = 0; l < ctx.topology.levels.size() && l < e.level_bytes.size(); ++l) {
    j.Key(ctx.topology.levels[l].name);
    j.Bytes(e.level_bytes[l]);
  }
  j.EndObject();
  j.EndObject();

  j.Key("compute");
  j.BeginObject();
  j.Key("flops_max");
  j.Number(e.flops_max);
  j.Key("flops_mean");
  j.Number(e.flops_mean);
  j.Key("imbalance");
  j.Number(e.imbalance());
  j.EndObject();

  j.Key("memory");
  j.BeginObject();
  j.Key("peak_bytes_per_gpu");
  j.Bytes(e.peak_memory_bytes);
  j.Key("gpu_bytes");
  j.Bytes(ctx.topology.gpu.memory_bytes);
  j.Key("fits");
  j.Bool(e.fits);
  j.Key("cache_forward");
  j.Bool(e.params.cache_forward);
  j.EndObject();

  j.Key("time");
  j.BeginObject();
  j.Key("stages");
  j.BeginArray();
  for (const planner::TimeStage& s : e.stages) {
    j.BeginObject();
    j.Key("label");
    j.String(s.label);
    j.Key("count");
    j.Int(s.count);
    j.Key("compute_s");
    j.Number(s.compute_s);
    j.Key("comm_s");
    j.Number(s.comm_s);
    j.Key("overlapped");
    j.Bool(s.overlapped);
    j.Key("stage_s");  // count x (overlapped ? max : sum) of the two
    j.Number(s.Seconds());
    j.EndObject();
  }
  j.EndArray();
  j.Key("total_s");
  j.Number(e.time_s);
  j.Key("compute_s");
  j.Number(e.compute_s);
  j.Key("exposed_comm_s");
  j.Number(e.exposed_comm_s);
  j.EndObject();

  j.Key("schedule");
  j.BeginObject();
  const bool expanded = schedule != nullptr && !schedule->ranks.empty();
  j.Key("expanded");
  j.Bool(expanded);
  if (expanded) {
    const RankProgram& r0 = schedule->ranks[0];
    j.Key("ops");
    j.Int(schedule->TotalOps());
    j.Key("ranks");
    j.Int(schedule->num_ranks);
    j.Key("rank0_ops");
    j.Int(static_cast<long long>(r0.ops.size()));
    j.Key("rank0_first_ops");
    j.BeginArray();
    const size_t shown = std::min(r0.ops.size(), kExplainedOps);
    for (size_t i = 0; i < shown; ++i) OpJson(r0.ops[i], i, j);
    j.EndArray();
  } else {
    j.Key("reason");
    j.String("not expanded for " + std::to_string(ctx.num_ranks) +
             " ranks (the listing is limited to small clusters)");
  }
  j.EndObject();
  j.EndObject();
}

}  // namespace meshplan::report
