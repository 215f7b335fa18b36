#include "step/step_options.h"

namespace meshplan::step {

std::string_view RecomputeName(Recompute recompute) {
  switch (recompute) {
    case Recompute::kSelective:
      return "selective";
    case Recompute::kFull:
      return "full";
    default:
      return "none";
  }
}

Result<Recompute> ParseRecompute(std::string_view text) {
  for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    if (text == RecomputeName(r)) return r;
  }
  return Status::Invalid("--recompute: unknown choice '" + std::string(text) +
                         "' (expected none, selective, full or auto)");
}

std::string StepOptions::Degrees() const {
  return std::to_string(tp) + " x " + std::to_string(cp) + " x " + std::to_string(dp) + " x " +
         std::to_string(pp);
}

std::string StepOptions::Describe() const {
  return "TP " + std::to_string(tp) + " x CP " + std::to_string(cp) + " x DP " +
         std::to_string(dp) + " x PP " + std::to_string(pp) +
         (vpp > 1 ? " (" + std::to_string(vpp) + " virtual" +
                        (overlap_p2p_comm ? "" : ", p2p not overlapped") + ")"
                  : "") +
         " = " + std::to_string(gpus()) + " GPUs, micro-batch " + std::to_string(micro_batch) +
         " x " + std::to_string(micro_batches()) + " per step, " +
         std::string(DTypeName(gemm_dtype)) + " GEMMs, recompute " +
         std::string(RecomputeName(recompute)) + (tp_comm_overlap ? ", TP comm overlapped" : "") +
         (grad_reduce_bf16 ? ", gradients reduced in bf16" : "");
}

Result<StageLayers> SplitLayers(int64_t layers, int64_t pp, int64_t vpp) {
  const auto refuse = [&](const std::string& why) {
    return Status::Invalid("--pp: " + std::to_string(layers) + " layers over " +
                           std::to_string(pp) + " pipeline stages: " + why);
  };
  if (pp > layers) return refuse("more stages than layers");
  if (vpp > 1 && layers % (pp * vpp) != 0)
    return refuse("the interleaved schedule needs PP x VPP to divide the layers");
  const int64_t middle = (layers + pp - 1) / pp;
  if (pp == 1) return StageLayers{layers, layers, layers};
  if (layers % pp == 0) return StageLayers{middle, middle, middle};
  const int64_t rest = layers - (pp - 2) * middle;  // the first and last stages' layers
  StageLayers split{(rest + 1) / 2, middle, rest / 2};
  if (pp == 2) split = {middle, middle, layers - middle};
  if (split.last < 1 || split.first > middle)
    return refuse("no split leaves every stage at least one layer and the ends at most a middle's");
  return split;
}

Status ValidateStepOptions(const StepOptions& o) {
  const std::pair<const char*, int64_t> degrees[] = {
      {"--tp", o.tp}, {"--cp", o.cp},   {"--dp", o.dp},
      {"--pp", o.pp}, {"--vpp", o.vpp}, {"--micro-batch", o.micro_batch}};
  for (const auto& [flag, value] : degrees) {
    if (value < 1 || value > (int64_t{1} << 24)) {
      return Status::Invalid(std::string(flag) + ": must be in 1.." +
                             std::to_string(int64_t{1} << 24) + ", got " + std::to_string(value));
    }
  }
  if (o.global_batch < 0 || o.global_batch > (int64_t{1} << 30))
    return Status::Invalid("--global-batch: must be in 1..2^30 (0: one micro-batch per DP rank)");
  if (o.global_batch_or_default() % (o.dp * o.micro_batch) != 0) {
    return Status::Invalid("--global-batch: " + std::to_string(o.global_batch) +
                           " sequences is not a multiple of DP x micro batch (" +
                           std::to_string(o.dp * o.micro_batch) + ")");
  }
  if (o.vpp > 1 && o.pp == 1) return Status::Invalid("--vpp: virtual stages need --pp above 1");
  if (o.vpp > 1 && o.micro_batches() % o.pp != 0) {
    return Status::Invalid(
        "--vpp: Megatron's interleaved schedule needs the micro-batches per "
        "step (" +
        std::to_string(o.micro_batches()) + ") to be a multiple of --pp (" + std::to_string(o.pp) +
        ")");
  }
  if (!(o.reserve_bytes >= 0)) return Status::Invalid("--reserve-gib: must not be negative");
  return Status::Ok();
}

}  // namespace meshplan::step
