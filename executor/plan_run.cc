#include "executor/plan_run.h"

#include <chrono>
#include <limits>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "executor/device/half_float.h"
#include "executor/host_memory.h"
#include "executor/io/run_files.h"
#include "executor/output_check.h"
#include "executor/timing/foreign_load.h"
#include "planner/plan_schedule.h"

namespace meshplan::exec {
namespace {

// The plan's schedule and estimate; a plan made valid only by widening its pass says so.
Result<planner::PlanSchedule> ExpandFor(const Plan& plan, const Topology& topology, bool widened) {
  auto expanded = planner::ExpandPlan(plan, topology);
  if (expanded.ok()) return std::move(expanded).value();
  std::string message = expanded.status().message();
  const std::string invalid = "is not valid on topology '" + topology.name + "'";
  if (const size_t at = message.find(invalid); widened && at != std::string::npos) {
    message.insert(at + invalid.size(), " with pass fwd+bwd");
  }
  return expanded.status().code() == ErrorCode::kInvalidInput ? Status::Invalid(message)
                                                              : Status::Internal(message);
}

// `config` with a session of its own when it has none, so the runs of one repeat share what the
// backend set up (cuDNN graphs) and the timed runs measure the kernels.
ExecuteConfig WithSession(const ExecuteConfig& config) {
  ExecuteConfig out = config;
  if (!out.session) out.session = std::make_shared<BackendSession>();
  return out;
}

void Round(InputType type, TensorF& t) {
  if (type == InputType::kFp32) return;
  for (float& x : t.data) x = RoundToInput(type, x);
}

// Whole tensors read from files (the reader caps each file, so they are small), as a source.
class FileInputSource final : public InputSource {
 public:
  explicit FileInputSource(AttentionTensors<float> tensors)
      : tensors_(std::move(tensors)), view_(tensors_) {}
  void Row(InputTensor tensor, int64_t b, int64_t position, float* out) const override {
    view_.Row(tensor, b, position, out);
  }

 private:
  AttentionTensors<float> tensors_;
  TensorInputSource view_;
};

}  // namespace

Result<PlanRun> PreparePlanRun(const Plan& plan, const std::string& plan_path,
                               const Topology& topology, const PlanInputs& inputs, InputType type,
                               const HostBudget& budget) {
  PlanRun run;
  run.plan = plan;
  auto as_written = ExpandFor(run.plan, topology, false);
  if (!as_written.ok()) return as_written.status().WithContext(plan_path);
  planner::PlanSchedule expanded;
  if (run.plan.workload.pass == Pass::kBackward) {
    run.widened = true;
    run.plan.workload.pass = Pass::kForwardBackward;
    auto widened = ExpandFor(run.plan, topology, true);
    if (!widened.ok()) return widened.status().WithContext(plan_path);
    expanded = std::move(widened).value();
  } else {
    expanded = std::move(as_written).value();
  }
  run.schedule = std::move(expanded.schedule);
  run.modelled_rank_peak_bytes = expanded.estimate.peak_memory_bytes;
  const Workload& w = run.plan.workload;
  if (budget.limit_bytes > 0) {
    HostMemoryQuestion question;
    question.workload = w;
    question.rank_peak_bytes = expanded.estimate.peak_memory_bytes;
    question.ranks_in_process = budget.ranks_in_process;
    question.random_inputs = inputs.dir.empty();
    question.check = budget.check;
    question.keep_outputs = budget.keep_outputs;
    MESHPLAN_RETURN_IF_ERROR(CheckHostMemory(EstimateHostMemory(question), question,
                                             budget.limit_bytes, budget.limit_source)
                                 .WithContext(plan_path));
  }
  // The engine's entries index heads and head elements with 32 bits.
  for (const auto& [key, value] :
       {std::pair<const char*, int64_t>{"head_dim", w.head_dim}, {"heads", w.q_heads}}) {
    if (value > std::numeric_limits<int32_t>::max()) {
      return Status::Invalid(plan_path + ": workload." + key + " = " + std::to_string(value) +
                             ": the executor handles at most 2147483647 (2^31 - 1)");
    }
  }
  if (!inputs.dir.empty()) {
    MESHPLAN_ASSIGN_OR_RETURN(auto in, ReadInputFiles(inputs.dir, w));
    run.inputs = std::make_shared<FileInputSource>(std::move(in));
  } else {
    run.inputs = std::make_shared<SeededInputSource>(w, inputs.seed);
  }
  run.type = type;
  run.tolerance = CheckTolerance(type);
  return run;
}

AttentionTensors<float> CheckInputs(const PlanRun& run) {
  AttentionTensors<float> in = MaterializeInputs(run.plan.workload, *run.inputs);
  for (TensorF* t : {&in.q, &in.k, &in.v, &in.d_o}) Round(run.type, *t);
  return in;
}

Result<ExecutionResult> Execute(const PlanRun& run, const ExecuteConfig& config) {
  return Execute(run.schedule, run.plan.workload, *run.inputs, config);
}

Result<RepeatedExecution> ExecuteRepeated(const PlanRun& run, const ExecuteConfig& config,
                                          int repeat, const RunObserver& observer) {
  MESHPLAN_RETURN_IF_ERROR(CheckRepeat(repeat).WithContext("repeat"));
  const int warm_up = WarmUpRuns(repeat);
  ExecuteConfig session_config = WithSession(config);
  RepeatedExecution out;
  std::vector<std::vector<std::vector<OpTiming>>> timings;
  std::vector<double> wall_s;
  std::optional<ForeignCpuMeter> foreign;  // over the timed runs
  for (int i = 0; i < warm_up + repeat; ++i) {
    if (i == warm_up) foreign.emplace();
    MESHPLAN_ASSIGN_OR_RETURN(auto result, Execute(run, session_config));
    session_config.on_start = nullptr;  // once, before the first run
    const int timed = i - warm_up + 1;  // 0: the warm-up
    if (observer)
      observer(timed < 1 ? 0 : timed, repeat, MeasureTimeline(run.schedule, result.timings).run_s);
    if (timed < 1) continue;
    timings.push_back(result.timings);
    wall_s.push_back(result.wall_s);
    if (timed == 1) out.first = std::move(result);
  }
  out.runs = SummarizeRuns(run.schedule, warm_up, timings, wall_s);
  out.runs.foreign_cores = foreign ? foreign->Cores() : -1;
  out.runs.machine_cores = static_cast<int>(std::thread::hardware_concurrency());
  return out;
}

Result<JobRank> RunJobRank(Transport& transport, const PlanRun* run, const Status& setup, int code,
                           const ExecuteConfig& config, std::chrono::milliseconds timeout,
                           int repeat, const RunObserver& observer) {
  const int rank = transport.rank();
  JobRank out;
  // Every rank gets the same `repeat` (the same flags); a bad one fails on every rank alike.
  MESHPLAN_RETURN_IF_ERROR(CheckRepeat(repeat).WithContext("repeat"));
  const int warm_up = WarmUpRuns(repeat);
  const ExecuteConfig session_config = WithSession(config);
  std::vector<std::vector<std::vector<OpTiming>>> all_timings;  // rank 0: [timed run][rank][op]
  std::vector<double> wall_s;
  for (int i = 0; i < warm_up + repeat; ++i) {
    const int timed = i - warm_up + 1;  // 0 or less: the warm-up
    // The start barrier of this run: the first also agrees that every rank prepared; later ones
    // keep a rank from starting a run while another is still in the previous one.
    const Clock::time_point barrier_deadline = Clock::now() + timeout + std::chrono::seconds(30);
    auto codes = ExchangeCodes(transport, i > 0 || run != nullptr ? 0 : code, barrier_deadline);
    if (!codes.ok()) {
      transport.Abort(codes.status().WithContext("rank " + std::to_string(rank) + ": start"));
      return codes.status();
    }
    for (int r = 0; r < static_cast<int>(codes->size()); ++r) {
      if ((*codes)[r] != 0) {
        out.failed_rank = r;
        out.failure_code = (*codes)[r];
        if (r == rank) out.failure = setup;
        return out;
      }
    }
    if (i == 0 && config.on_start) config.on_start();
    const PlanRun& p = *run;
    AttentionTensors<float> outputs = OutputTensors(p.plan.workload);
    std::vector<uint8_t> covered(CoverageSize(p.plan.workload), 0);
    std::vector<OpTiming> timings;
    const Clock::time_point start = Clock::now();
    // A failing rank aborts the whole job from inside the engine; this is the backstop.
    const Status st = ExecuteRank(p.schedule, p.plan.workload, *p.inputs, session_config, transport,
                                  &outputs, &covered, &timings, &out.device);
    if (!st.ok()) transport.Abort(st);
    auto gathered = GatherOutputs(transport, p.plan.workload, outputs, covered, timings,
                                  Clock::now() + timeout);
    if (!gathered.ok()) {
      // A message that never came: the job may hang elsewhere, so end it. A gathered result that
      // is incomplete (no rank produced some element) is rank 0's to report.
      if (gathered.status().code() == ErrorCode::kIo || rank != 0) {
        transport.Abort(gathered.status().WithContext("rank " + std::to_string(rank) + ": gather"));
      }
      return gathered.status();
    }
    const double wall = std::chrono::duration<double>(Clock::now() - start).count();
    if (rank == 0 && observer) {
      observer(timed < 1 ? 0 : timed, repeat, MeasureTimeline(p.schedule, gathered->timings).run_s);
    }
    if (timed < 1) continue;
    wall_s.push_back(wall);
    if (rank == 0) all_timings.push_back(gathered->timings);
    if (timed == 1) {
      out.wall_s = wall;
      if (rank == 0) out.gathered = std::move(gathered).value();
    }
  }
  if (rank == 0) {
    out.runs = SummarizeRuns(run->schedule, warm_up, all_timings, wall_s);
  } else {
    out.runs.warm_up = warm_up;
    out.runs.wall_s = std::move(wall_s);
  }
  return out;
}

}  // namespace meshplan::exec
