// `meshplan calibrate`: measure this machine with the executor's kernels and transport and write
// it as a topology file (executor/calibration/calibration.h does the measuring and fitting). The
// cpu backend is measured by CpuCalibrationTarget (the CPU kernels and threads transport called
// directly), a GPU (--backend cuda) by EngineCalibrationTarget (tiny schedules through the
// execution engine, as runs use the device).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <memory>
#include <string>
#include <thread>

#include "capacity/draw_range.h"
#include "core/base/atomic_file.h"
#include "core/base/units.h"
#include "core/cluster/topology_toml.h"
#include "executor/calibration/calibration.h"
#include "executor/calibration/calibration_draws.h"
#include "executor/calibration/cpu_calibration.h"
#include "executor/calibration/engine_calibration.h"
#include "executor/timing/foreign_load.h"
#include "report/format/text_table.h"
#include "report/runs/calibration_report.h"
#include "tools/calibrate_cuda.h"
#include "tools/cli_common.h"
#include "tools/commands.h"
#include "tools/execute_run.h"
#include "tools/progress_bar.h"
#include "tools/self_command.h"

namespace meshplan::tools {
namespace {

struct CalibrateFlags {
  std::string backend = "cpu";
  std::string transport;  // empty: the backend's (cpu: threads, cuda: local)
  std::string kernels;    // cuda only; empty: auto
  int ranks = 0;          // given with --ranks; else the hardware threads (cpu) or kCudaRanks
  int64_t head_dim = 128;
  int64_t heads = 1;  // given with --heads; else 1 (cpu) or kCudaHeads
  bool quick = false;
  bool quiet = false;
  bool samples = false;  // print every kernel sample, measured against the fitted model
  std::string out;
  std::string name = "machine";
  std::string format = "toml";  // toml: the topology file; json: it with the fit and samples
  int draws = 1;                // calibrations combined, each in a process of its own
};

// Virtual ranks a GPU is calibrated for without --ranks (the device checks' plans use 8).
constexpr int kCudaRanks = 8;
// Heads per block a GPU is calibrated with without --heads: a block call reaches the GPU's rate
// only with enough heads to fill its SMs (a 4K block of one head is 32 query tiles for 132 SMs).
// Calibrated with one head on an H200 (2026-11-28, docs/gpu-results.md), the blocks read a peak of
// 83 TFLOP/s and 2K blocks 31% of it, where the plans it predicted ran at 400-450 TFLOP/s.
constexpr int64_t kCudaHeads = 32;

Status CheckFlags(const CalibrateFlags& f) {
  if (f.backend == "cuda") {
    if (!CudaBackendBuilt()) {
      return Status::Invalid(
          "--backend: backend 'cuda' is not built in this binary (it was built without the CUDA "
          "toolkit)");
    }
    if (!f.transport.empty() && f.transport != "local") {
      return Status::Invalid(
          "--transport: calibrate --backend cuda measures the copies between "
          "virtual ranks on one GPU (local), got '" +
          f.transport + "'");
    }
  } else if (f.backend == "cpu") {
    if (!f.kernels.empty()) return Status::Invalid("--kernels: applies to --backend cuda only");
    if (!f.transport.empty() && f.transport != "threads") {
      return Status::Invalid(
          "--transport: calibrate measures the threads transport (got '" + f.transport +
          "'); an MPI job on one machine shares its cores the same way, see docs/fidelity.md");
    }
  } else {
    return Status::Invalid("--backend: expected cpu or cuda, got '" + f.backend + "'");
  }
  if (f.name.empty()) return Status::Invalid("--name: must not be empty");
  if (f.draws < 1 || f.draws > kMaxCalibrationDraws) {
    return Status::Invalid("--draws: must be in 1.." + std::to_string(kMaxCalibrationDraws) +
                           ", got " + std::to_string(f.draws));
  }
  return CheckFormat(f.format, {"toml", "json"});
}

// The file's first lines: what made it and how well the model fits what was measured.
std::string Header(const exec::CalibrationResult& r) {
  char when[64] = "";
  const std::time_t now = std::time(nullptr);
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  char buffer[512];
  std::snprintf(
      buffer, sizeof buffer,
      "# Written by meshplan calibrate, %s. Kernel model vs measured: median %.1f%%, max %.1f%% "
      "over %zu samples; messages: median %.1f%%, max %.1f%% over %zu sizes. docs/fidelity.md\n",
      when, 100 * r.kernel_median_residual, 100 * r.kernel_max_residual, r.kernels.size(),
      100 * r.message_median_residual, 100 * r.message_max_residual, r.messages.size());
  return buffer;
}

void PrintSummary(const exec::CalibrationResult& r) {
  const GpuSpec& g = r.topology.gpu;
  std::fprintf(stderr,
               "calibrate: peak %.4g GFLOP/s per kernel, backward rate ratio %.3g, %.3g extra "
               "pairs per cut row\n",
               g.PeakFlopsPerSecond(DType::kFp32) / 1e9, g.backward_rate_ratio,
               g.cut_row_extra_pairs);
  std::fprintf(stderr, "calibrate: efficiency by block:");
  for (const EfficiencyPoint& p : g.attention_efficiency) {
    std::fprintf(stderr, " %s:%.0f%%", FormatCount(p.block_tokens).c_str(), 100 * p.efficiency);
  }
  std::fprintf(stderr,
               "\ncalibrate: kernel fit residual |model/measured - 1|: median %.1f%%, max %.1f%%; "
               "by piece (median):",
               100 * r.kernel_median_residual, 100 * r.kernel_max_residual);
  for (exec::BlockPiece piece : exec::kBlockPieces) {
    std::fprintf(stderr, " %s %.1f%%", std::string(exec::BlockPieceName(piece)).c_str(),
                 100 * exec::PieceMedianResidual(r, piece));
  }
  std::fprintf(stderr, "\n");
  std::fprintf(stderr, "calibrate: merges at %.3g GB/s\n", g.hbm_bytes_per_s / 1e9);
  if (!r.reference_block_s.empty()) {
    const CalibrationRecord& c = r.topology.calibration;
    std::string rounds;
    for (double f : r.round_time_factors)
      rounds += (rounds.empty() ? "" : ", ") + report::Fixed(f, 3);
    std::fprintf(stderr,
                 "calibrate: the machine's speed: a %lld-token reference block took %.3g ms "
                 "(median of %zu timed between the phases); the kernel rounds took %s of their "
                 "samples' median times: drift %.1f%%\n",
                 static_cast<long long>(exec::kReferenceBlockTokens), 1e3 * c.reference_block_s,
                 r.reference_block_s.size(), rounds.c_str(), 100 * c.speed_spread);
  }
  if (r.sharing.ranks > 1) {
    std::fprintf(stderr,
                 "calibrate: %d ranks on one device: %.2g kernels at full rate, %s sharing (one "
                 "alone %.1f ms, "
                 "all at once end spread %.0f%%, the last %.3g ms after the median)\n",
                 r.sharing.ranks, g.concurrent_kernels,
                 std::string(DeviceSharingName(g.sharing)).c_str(), 1e3 * r.sharing.alone_s,
                 100 * r.sharing.spread, 1e3 * r.sharing.end_lag_s);
    if (r.sharing.long_fair_end_s > 0) {
      std::fprintf(stderr,
                   "calibrate: the last rank's lag: %.3g ms in races of %.3g ms, %.3g ms in races "
                   "of %.3g ms: %.3g ms + %.3g of the run\n",
                   1e3 * r.sharing.end_lag_s, 1e3 * r.sharing.fair_end_s,
                   1e3 * r.sharing.long_end_lag_s, 1e3 * r.sharing.long_fair_end_s,
                   1e3 * g.sharing_end_lag_s, g.sharing_end_lag_fraction);
    }
    const NetworkLevel& l = r.topology.levels[0];
    std::fprintf(
        stderr,
        "calibrate: messages: %.3g us + bytes / %.3g GB/s (residual median %.1f%%, max %.1f%%)\n",
        l.latency_s * 1e6, l.bandwidth_bytes_per_s / 1e9, 100 * r.message_median_residual,
        100 * r.message_max_residual);
    std::fprintf(stderr, "calibrate: messages measured (model):");
    for (const exec::MessageSample& m : r.messages) {
      std::fprintf(stderr, " %s %.3g us (%.3g)", FormatBytes(static_cast<double>(m.bytes)).c_str(),
                   m.measured_s * 1e6, m.model_s * 1e6);
    }
    std::fprintf(stderr, "\n");
  }
}

// Every kernel sample: its rate as a fraction of the fitted peak (visible FLOPs by the model's
// count over the time alone) and the model's time against the measured one, so the fit's residual
// can be traced to a piece and a size.
void PrintSamples(const exec::CalibrationResult& r) {
  const double peak = r.topology.gpu.PeakFlopsPerSecond(DType::kFp32);
  std::fprintf(
      stderr,
      "calibrate: kernel samples (time alone per block; rate as a fraction of the peak):\n");
  std::fprintf(stderr, "  %-8s %-8s %6s %12s %12s %8s %8s\n", "piece", "pass", "n", "measured",
               "model", "rate", "model/measured-1");
  for (const exec::KernelSample& k : r.kernels) {
    std::fprintf(stderr, "  %-8s %-8s %6s %9.3f ms %9.3f ms %7.1f%% %+7.1f%%\n",
                 std::string(exec::BlockPieceName(k.piece)).c_str(),
                 k.backward ? "backward" : "forward", FormatCount(k.n).c_str(), 1e3 * k.measured_s,
                 1e3 * k.model_s, 100 * k.flops / k.measured_s / peak,
                 100 * (k.model_s / k.measured_s - 1.0));
  }
}

// The calibration the flags ask for: ranks and heads (defaults by backend), the device measured.
// Errors: no GPU for --backend cuda, a spec CheckCalibrationSpec refuses.
Result<exec::CalibrationSpec> MakeCalibrationSpec(const CalibrateFlags& f, bool ranks_given,
                                                  bool heads_given) {
  const bool cuda = f.backend == "cuda";
  exec::CalibrationSpec spec;
  const int cpu_ranks = static_cast<int>(std::clamp(
      std::thread::hardware_concurrency(), 1u, static_cast<unsigned>(exec::kMaxCalibrationRanks)));
  spec.ranks = ranks_given ? f.ranks : (cuda ? kCudaRanks : cpu_ranks);
  spec.head_dim = f.head_dim;
  spec.heads = heads_given ? f.heads : (cuda ? kCudaHeads : 1);
  spec.quick = f.quick;
  spec.name = f.name;
  spec.transport = cuda ? "local" : "threads";
  if (cuda) {
    // No GPU (no driver, no device): refused here, before anything is measured or written.
    MESHPLAN_ASSIGN_OR_RETURN(auto device, FirstCudaDevice());
    spec.device_model = device.model;
    spec.memory_bytes = device.memory_bytes;
  } else {
    spec.device_model = exec::CpuCalibrationTarget::DeviceModel();
    spec.memory_bytes = exec::CpuCalibrationTarget::PhysicalMemoryBytes();
  }
  MESHPLAN_RETURN_IF_ERROR(exec::CheckCalibrationSpec(spec));
  return spec;
}

// The CUDA engine's configuration as execute --backend cuda fills it (bf16 inputs, the kernels
// of --kernels); nothing for the CPU.
Result<exec::ExecuteConfig> CudaConfig(const CalibrateFlags& f) {
  exec::ExecuteConfig config;
  if (f.backend == "cuda") {
    MESHPLAN_RETURN_IF_ERROR(
        SetCudaKernels(f.kernels.empty() ? "auto" : f.kernels, exec::InputType::kBf16, &config));
  }
  return config;
}

// What is measured: the CPU kernels and threads, or the CUDA engine (one for all virtual ranks).
std::unique_ptr<exec::CalibrationTarget> MakeTarget(const CalibrateFlags& f,
                                                    const exec::CalibrationSpec& spec,
                                                    const exec::ExecuteConfig& cuda_config) {
  if (f.backend == "cuda") {
    return std::make_unique<exec::EngineCalibrationTarget>(cuda_config, spec.head_dim, spec.heads,
                                                           spec.quick);
  }
  return std::make_unique<exec::CpuCalibrationTarget>(spec.head_dim, spec.heads, spec.quick);
}

// The measured topology as text (TOML, or JSON holding it) with its record of the run.
std::string CalibrationText(const CalibrateFlags& f, exec::CalibrationResult& result, double load,
                            double foreign_cores) {
  CalibrationRecord& record = result.topology.calibration;
  record.other_processes_cores = foreign_cores >= 0 ? std::round(foreign_cores * 100) / 100 : -1;
  record.load_average = load >= 0 ? std::round(load * 100) / 100 : -1;
  record.cores = static_cast<int64_t>(std::thread::hardware_concurrency());
  record.kernel_median_error = std::round(result.kernel_median_residual * 1000) / 1000;
  record.kernel_max_error = std::round(result.kernel_max_residual * 1000) / 1000;
  std::string text = Header(result) + TopologyToToml(result.topology);
  if (f.format == "json") text = report::CalibrationJson(result, text);
  return text;
}

// The calibrated file where -o says (atomically), else on stdout. Returns the exit code.
int EmitCalibration(const CalibrateFlags& f, const std::string& text) {
  if (f.out.empty()) {
    std::fputs(text.c_str(), stdout);
    return kExitOk;
  }
  if (Status st = WriteFileAtomically(f.out, text); !st.ok()) return ReportError(st);
  if (!f.quiet) std::fprintf(stderr, "calibrate: wrote %s\n", f.out.c_str());
  return kExitOk;
}

// The arguments of one draw's child process: this calibration's, as one calibration in TOML on
// stdout.
std::vector<std::string> DrawArguments(const CalibrateFlags& f, const exec::CalibrationSpec& spec) {
  std::vector<std::string> args = {"calibrate",
                                   "--backend",
                                   f.backend,
                                   "--ranks",
                                   std::to_string(spec.ranks),
                                   "--head-dim",
                                   std::to_string(spec.head_dim),
                                   "--heads",
                                   std::to_string(spec.heads),
                                   "--name",
                                   f.name,
                                   "--format",
                                   "toml"};
  if (!f.transport.empty()) args.insert(args.end(), {"--transport", f.transport});
  if (!f.kernels.empty()) args.insert(args.end(), {"--kernels", f.kernels});
  if (f.quick) args.push_back("--quick");
  if (f.quiet) args.push_back("-q");
  if (f.samples) args.push_back("--samples");
  return args;
}

// The combined file's first line: what made it and how far its draws disagree.
std::string DrawsHeader(int draws, const capacity::DrawRange& range) {
  char when[64] = "";
  const std::time_t now = std::time(nullptr);
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  char buffer[512];
  std::snprintf(buffer, sizeof buffer,
                "# Written by meshplan calibrate --draws %d, %s: each value the median of %d "
                "calibrations, each in a process of its own; their predictions of %lld probe "
                "plans lie %.3f-%.3fx this file's (median). docs/fidelity.md, \"Draws\"\n",
                draws, when, draws, static_cast<long long>(range.plans), range.low, range.high);
  return buffer;
}

void PrintDrawsSummary(const std::vector<Topology>& draws, const Topology& combined,
                       const capacity::DrawRange& range) {
  std::string peaks;
  for (const Topology& t : draws)
    peaks += (peaks.empty() ? "" : ", ") +
             report::Fixed(t.gpu.PeakFlopsPerSecond(DType::kFp32) / 1e9, 3);
  std::fprintf(stderr,
               "calibrate: %zu draws combined, each value their median: peak %.4g GFLOP/s (the "
               "draws: %s)\n",
               draws.size(), combined.gpu.PeakFlopsPerSecond(DType::kFp32) / 1e9, peaks.c_str());
  std::fprintf(stderr,
               "calibrate: the draws' own predictions of %lld probe plans lie %.3f-%.3fx the "
               "combined file's (median over the plans): read each prediction on it as that "
               "range\n",
               static_cast<long long>(range.plans), range.low, range.high);
}

// calibrate --draws N: N calibrations, each in a child process (a process is itself one draw of
// the machine's speed), combined value by value (exec::CombineDraws), with the range their own
// predictions take around the combination's (capacity::MeasureDrawRange).
int RunCalibrateDraws(const CalibrateFlags& f, const exec::CalibrationSpec& spec, double load) {
  std::vector<Topology> draws;
  for (int i = 1; i <= f.draws; ++i) {
    if (!f.quiet) {
      std::fprintf(stderr, "calibrate: draw %d of %d, a process of its own\n", i, f.draws);
    }
    auto child = RunSelfCommand(DrawArguments(f, spec));
    if (!child.ok()) return ReportError(child.status());
    // The child said why on stderr; its exit status is this one's.
    if (child->exit_code != 0) return child->exit_code;
    auto draw = ParseTopologyToml(child->stdout_text, "calibrate draw " + std::to_string(i));
    if (!draw.ok()) return ReportError(draw.status());
    draws.push_back(std::move(*draw));
  }
  auto combined = exec::CombineDraws(draws);
  if (!combined.ok()) return ReportError(combined.status());
  capacity::DrawProbe probe;
  probe.head_dim = spec.head_dim;
  probe.dtype = f.backend == "cuda" ? DType::kBf16 : DType::kFp32;
  probe.tokens_per_rank = f.backend == "cuda" ? 8192 : 2048;
  auto range = capacity::MeasureDrawRange(draws, *combined, probe);
  if (!range.ok()) return ReportError(range.status());
  CalibrationRecord& record = combined->calibration;
  record.draws = f.draws;
  record.draw_low = range->low;
  record.draw_high = range->high;
  record.load_average = load >= 0 ? std::round(load * 100) / 100 : -1;
  record.cores = static_cast<int64_t>(std::thread::hardware_concurrency());
  if (Status st = combined->Validate(); !st.ok()) return ReportError(st);
  std::string text = DrawsHeader(f.draws, *range) + TopologyToToml(*combined);
  if (f.format == "json") text = report::CalibrationDrawsJson(*combined, *range, draws, text);
  // Each draw has said whether other processes disturbed it (even with -q); the file keeps the
  // most disturbed draw's share.
  if (!f.quiet) PrintDrawsSummary(draws, *combined, *range);
  return EmitCalibration(f, text);
}

int RunCalibrate(const CalibrateFlags& f, bool ranks_given, bool heads_given) {
  if (Status st = CheckFlags(f); !st.ok()) return ReportError(st);
  auto cuda_config = CudaConfig(f);
  if (!cuda_config.ok()) return ReportError(cuda_config.status());
  auto spec = MakeCalibrationSpec(f, ranks_given, heads_given);
  if (!spec.ok()) return ReportError(spec.status());
  // Fail on an unwritable output before minutes of measuring, not after.
  if (!f.out.empty()) {
    if (Status st = CheckWritableOutput(f.out); !st.ok()) return ReportError(st);
  }
  // The background load before our own threads start (the 1-minute average lags them).
  const double load = exec::CpuCalibrationTarget::LoadAverage();
  if (f.draws > 1) return RunCalibrateDraws(f, *spec, load);
  const std::unique_ptr<exec::CalibrationTarget> target = MakeTarget(f, *spec, *cuda_config);
  // A line per phase; on a terminal, above a bar of the phases (they differ in length, so it
  // shows no time left).
  auto bar = std::make_unique<ProgressBar>("calibrate", /*time_left=*/false);
  const int phases = exec::CalibrationPhases(*target, *spec);
  int phase = 0;
  const exec::ForeignCpuMeter foreign;
  auto result = exec::Calibrate(*target, *spec, [&](const std::string& line) {
    if (f.quiet) return;
    bar->Update(phase++, phases);
    bar->Print("calibrate: " + line);
  });
  bar.reset();
  if (!result.ok()) return ReportError(result.status());
  const double foreign_cores = foreign.Cores();
  const std::string text = CalibrationText(f, *result, load, foreign_cores);
  if (!f.quiet) PrintSummary(*result);
  // Said even with -q: a disturbed calibration is a wrong file, not a detail.
  const std::string disturbance = exec::DisturbanceNote(
      foreign_cores, static_cast<int>(std::thread::hardware_concurrency()), "the calibration",
      "its rates describe this machine shared with them, not this machine");
  if (!disturbance.empty()) std::fprintf(stderr, "meshplan: note: %s\n", disturbance.c_str());
  if (f.samples) PrintSamples(*result);
  return EmitCalibration(f, text);
}

}  // namespace

Runner RegisterCalibrateCommand(CLI::App& app) {
  auto f = std::make_shared<CalibrateFlags>();
  CLI::App* cmd =
      app.add_subcommand("calibrate",
                         "Measure this machine (or its GPU: --backend cuda) with the executor's "
                         "own kernels and transport and write it as a topology file "
                         "(for plan, simulate, sweep and execute -t): kernel rate by block size "
                         "and mask piece, backward and merge "
                         "rates, how ranks share the device, message latency and bandwidth");
  cmd->add_option("--backend", f->backend,
                  "Backend to measure: cpu (the CPU kernels and threads transport) or cuda (the "
                  "first GPU through the execution engine, as execute --backend cuda uses it: "
                  "--ranks virtual ranks sharing it, the kernels --kernels picks, "
                  "device-to-device copies, merges)")
      ->capture_default_str();
  cmd->add_option("--transport", f->transport,
                  "Transport to measure: threads (cpu, the default there) or local (cuda, the "
                  "default there: copies between virtual ranks)");
  cmd->add_option("--kernels", f->kernels,
                  "cuda only: the kernels blocks run on, as for execute: auto (cuDNN where it "
                  "takes a block, else the own kernels; the default), cudnn, tensor or simt");
  CLI::Option* ranks = cmd->add_option("--ranks", f->ranks,
                                       "Ranks that will share the machine (the topology's GPU "
                                       "slots, 1 to 256; default: the hardware "
                                       "threads; cuda: 8 virtual ranks)");
  cmd->add_option("--head-dim", f->head_dim,
                  "Head dimension of the kernels measured (the plans' d)")
      ->capture_default_str();
  CLI::Option* heads =
      cmd->add_option("--heads", f->heads,
                      "Heads per kernel call measured, as the plans' blocks carry them (default: 1 "
                      "on cpu, 32 on cuda: a GPU block call needs enough heads to fill the SMs)");
  cmd->add_flag(
      "--quick", f->quick,
      "Fewer block sizes and repetitions: a third to a half of the time (measured on 2 cores: "
      "16-21 s against 44-45 s)");
  cmd->add_option("-o,--out", f->out, "Write the topology here (atomically); default: stdout");
  cmd->add_option("--name", f->name, "The topology's name")->capture_default_str();
  cmd->add_option("--format", f->format,
                  "Output: toml (the topology file plan, simulate and execute -t read) or json "
                  "(the cluster, the fit's residuals, every sample, and the TOML text as \"toml\")")
      ->capture_default_str();
  cmd->add_option("--draws", f->draws,
                  "Calibrations to combine, 1 to 9, each in a process of its own: the file holds "
                  "each value's median over them and the range their own predictions take "
                  "(draw_range), which plan, simulate and execute show beside every prediction; "
                  "N times as long (docs/fidelity.md, \"Draws\")")
      ->capture_default_str();
  cmd->add_flag("-q,--quiet", f->quiet, "No progress or summary on stderr (errors still go there)");
  cmd->add_flag(
      "--samples", f->samples,
      "Also print every kernel sample on stderr: measured and model time, rate against the peak");
  return [f, ranks, heads]() -> int {
    return RunCalibrate(*f, ranks->count() > 0, heads->count() > 0);
  };
}

}  // namespace meshplan::tools
