#include "report/step/step_report.h"

#include <utility>
#include <vector>

#include "core/base/json_writer.h"
#include "core/base/units.h"
#include "report/format/text_table.h"

namespace meshplan::report {
namespace {

// The step's parts in the order reports list them: JSON key, text label, seconds.
std::vector<std::pair<std::pair<const char*, const char*>, double>> TimeParts(
    const step::StepTime& t) {
  return {{{"attention_s", "attention (CP plan)"}, t.attention_s},
          {{"gemm_s", "GEMMs"}, t.gemm_s},
          {{"elementwise_s", "element-wise, loss, launches"}, t.elementwise_s},
          {{"tp_comm_s", "TP collectives (exposed)"}, t.tp_comm_s},
          {{"recompute_s", "recompute"}, t.recompute_s},
          {{"pp_p2p_s", "pipeline sends"}, t.pp_p2p_s},
          {{"pp_bubble_s", "pipeline bubble"}, t.pp_bubble_s},
          {{"dp_exposed_s", "DP collectives (exposed)"}, t.dp_exposed_s},
          {{"optimizer_s", "optimizer"}, t.optimizer_s}};
}

std::vector<std::pair<std::pair<const char*, const char*>, double>> MemoryParts(
    const step::StepMemory& m) {
  return {{{"weights_bytes", "weights (bf16)"}, m.weights_bytes},
          {{"grads_bytes", "gradients"}, m.grads_bytes},
          {{"optimizer_bytes", "optimizer (sharded)"}, m.optimizer_bytes},
          {{"activations_bytes", "activations kept"}, m.activations_bytes},
          {{"transient_bytes", "layer at work"}, m.transient_bytes},
          {{"reserve_bytes", "reserve"}, m.reserve_bytes}};
}

}  // namespace

std::string StepText(const step::StepRequest& r, const step::StepAnswer& a) {
  std::string out = r.model.Describe() + ", hidden " + std::to_string(r.model.hidden_size) +
                    ", MLP " + std::to_string(r.model.intermediate_size) + "\n";
  out += "sequence " + FormatCount(r.seq) + " tokens on " + r.cluster.name + ": " +
         a.options.Describe() + "\n\n";
  out += "step " + ShortSeconds(a.step_s()) + "   " + Fixed(a.tokens_per_s_per_gpu, 0) +
         " tokens/s/GPU   " + Fixed(a.model_tflops_per_gpu, 1) +
         " model TFLOP/s/GPU (Megatron's count)\n\n";
  std::vector<std::vector<std::string>> rows = {{"time", "seconds", "share"}};
  for (const auto& [names, seconds] : TimeParts(a.time)) {
    if (seconds <= 0) continue;
    rows.push_back(
        {names.second, ShortSeconds(seconds), Fixed(100 * seconds / a.step_s(), 1) + "%"});
  }
  out += Columns(rows, "  ", true) + "\n";
  rows = {{"memory per GPU", "bytes"}};
  for (const auto& [names, bytes] : MemoryParts(a.memory)) {
    if (bytes <= 0) continue;
    rows.push_back({names.second, ShortBytes(bytes)});
  }
  rows.push_back({"total", ShortBytes(a.memory.total_bytes())});
  out += Columns(rows, "  ", true);
  const double over = a.memory.total_bytes() - a.memory_capacity_bytes;
  out += a.fits ? "  fits in " + ShortBytes(a.memory_capacity_bytes) + "\n"
                : "  DOES NOT FIT: " + ShortBytes(over) + " over " +
                      ShortBytes(a.memory_capacity_bytes) + " (see the note below)\n";
  out += "\nattention: " + step::AttentionPlanText(*a.plan) + ", " +
         ShortSeconds(a.attention_s.forward_backward_s) +
         " per micro-batch (all layers, fwd+bwd)\n";
  if (!a.framework_settings.empty()) {
    out +=
        std::string(planner::FrameworkTitle(r.framework)) + ":\n  " + a.framework_settings + "\n";
  }
  for (const std::string& note : a.notes) out += "note: " + note + "\n";
  return out;
}

std::string StepJson(const step::StepRequest& r, const step::StepAnswer& a) {
  JsonWriter j;
  j.BeginObject();
  j.Key("model");
  j.String(r.model.name);
  j.Key("topology");
  j.String(r.cluster.name);
  j.Key("seq_len");
  j.Int(r.seq);
  const std::pair<const char*, int64_t> degrees[] = {
      {"gpus", a.options.gpus()},
      {"tp", a.options.tp},
      {"cp", a.options.cp},
      {"dp", a.options.dp},
      {"pp", a.options.pp},
      {"vpp", a.options.vpp},
      {"micro_batch", a.options.micro_batch},
      {"global_batch", a.options.global_batch_or_default()},
      {"micro_batches", a.time.micro_batches}};
  for (const auto& [key, value] : degrees) {
    j.Key(key);
    j.Int(value);
  }
  j.Key("gemm_dtype");
  j.String(DTypeName(a.options.gemm_dtype));
  j.Key("recompute");
  j.String(step::RecomputeName(a.options.recompute));
  j.Key("tp_comm_overlap");
  j.Bool(a.options.tp_comm_overlap);
  j.Key("overlap_p2p_comm");
  j.Bool(a.options.p2p_overlapped());
  j.Key("grad_reduce_in_bf16");
  j.Bool(a.options.grad_reduce_bf16);
  j.Key("step_kernel_rate_fraction");
  j.Number(a.step_kernel_rate_fraction);
  j.Key("step_s");
  j.Number(a.step_s());
  j.Key("tokens_per_s_per_gpu");
  j.Number(a.tokens_per_s_per_gpu);
  j.Key("model_tflops_per_gpu");
  j.Number(a.model_tflops_per_gpu);
  j.Key("model_flops");
  j.Number(a.model_flops);
  j.Key("fits");
  j.Bool(a.fits);
  j.Key("time");
  j.BeginObject();
  for (const auto& [names, seconds] : TimeParts(a.time)) {
    j.Key(names.first);
    j.Number(seconds);
  }
  j.EndObject();
  j.Key("memory");
  j.BeginObject();
  for (const auto& [names, bytes] : MemoryParts(a.memory)) {
    j.Key(names.first);
    j.Bytes(bytes);
  }
  j.Key("total_bytes");
  j.Bytes(a.memory.total_bytes());
  j.Key("capacity_bytes");
  j.Bytes(a.memory_capacity_bytes);
  j.EndObject();
  j.Key("attention_plan");
  j.String(step::AttentionPlanText(*a.plan));
  j.Key("framework_settings");
  j.String(a.framework_settings);
  j.Key("notes");
  j.BeginArray();
  for (const std::string& note : a.notes) j.String(note);
  j.EndArray();
  j.EndObject();
  return j.Take() + "\n";
}

std::string StepSearchText(const step::StepSearch& search, int top) {
  std::vector<std::vector<std::string>> rows = {{"#", "TP x CP x DP x PP", "recompute", "step",
                                                 "TFLOP/s/GPU", "memory", "fits", "attention"}};
  for (size_t i = 0; i < search.ranked.size(); ++i) {
    if (top > 0 && static_cast<int>(i) >= top) break;
    const step::SearchedStep& s = search.ranked[i];
    rows.push_back({std::to_string(i + 1), s.options.Degrees(),
                    std::string(step::RecomputeName(s.options.recompute)), ShortSeconds(s.step_s),
                    Fixed(s.model_tflops_per_gpu, 1), ShortBytes(s.memory_bytes),
                    s.fits ? "yes" : "no", s.plan});
  }
  return Columns(rows, "", true) + "\n" + std::to_string(search.candidates) + " configurations; " +
         std::to_string(search.evaluated) +
         " planned (the others cannot fit even with full recompute, or cannot beat the best "
         "found)\n";
}

std::string FrameworkComparisonText(const step::FrameworkComparison& c) {
  std::vector<std::vector<std::string>> rows = {
      {"framework", "TP x CP x DP x PP", "step", "TFLOP/s/GPU", "attention"}};
  rows.push_back({"any (every plan)", c.overall.options.Degrees(), ShortSeconds(c.overall.step_s),
                  Fixed(c.overall.model_tflops_per_gpu, 1), c.overall.plan});
  std::string why;
  for (const step::FrameworkBest& f : c.frameworks) {
    const std::string name(planner::FrameworkName(f.framework));
    if (!f.best) {
      rows.push_back({name, "-", "-", "-", "no configuration it runs"});
    } else {
      rows.push_back({name, f.best->options.Degrees(), ShortSeconds(f.best->step_s),
                      Fixed(f.best->model_tflops_per_gpu, 1), f.best->plan});
    }
    if (!f.why_not_overall.empty())
      why += "  " + name + " cannot run the best plan: " + f.why_not_overall + "\n";
  }
  return Columns(rows, "", true) + why;
}

std::string StepSearchJson(const step::StepSearch& search) {
  JsonWriter j;
  j.BeginObject();
  j.Key("configurations");
  j.BeginArray();
  for (const step::SearchedStep& s : search.ranked) {
    j.BeginObject();
    const std::pair<const char*, int64_t> degrees[] = {
        {"tp", s.options.tp}, {"cp", s.options.cp}, {"dp", s.options.dp}, {"pp", s.options.pp}};
    for (const auto& [key, value] : degrees) {
      j.Key(key);
      j.Int(value);
    }
    j.Key("recompute");
    j.String(step::RecomputeName(s.options.recompute));
    j.Key("step_s");
    j.Number(s.step_s);
    j.Key("model_tflops_per_gpu");
    j.Number(s.model_tflops_per_gpu);
    j.Key("memory_bytes");
    j.Bytes(s.memory_bytes);
    j.Key("fits");
    j.Bool(s.fits);
    j.Key("attention_plan");
    j.String(s.plan);
    j.EndObject();
  }
  j.EndArray();
  j.Key("candidates");
  j.Int(search.candidates);
  j.Key("evaluated");
  j.Int(search.evaluated);
  j.EndObject();
  return j.Take() + "\n";
}

}  // namespace meshplan::report
