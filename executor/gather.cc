#include "executor/gather.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>

#include "executor/execute.h"

namespace meshplan::exec {
namespace {

// Tags (added to kGatherTagBase).
constexpr int64_t kTagCodeUp = 0, kTagCodeDown = 1, kTagCovered = 2, kTagTimings = 3,
                  kTagValues = 4;

constexpr std::array<const char*, 5> kNames = {"O", "LSE", "dQ", "dK", "dV"};

bool InPass(const Workload& w, size_t tensor) {
  return tensor < 2 ? HasForward(w.pass) : HasBackward(w.pass);
}

// Heads of output tensor `tensor` (dK, dV: KV heads).
int64_t HeadsOf(const Workload& w, size_t tensor) { return tensor >= 3 ? w.kv_heads : w.q_heads; }

const TensorF& TensorAt(const AttentionTensors<float>& t, size_t tensor) {
  const TensorF* all[] = {&t.o, &t.lse, &t.dq, &t.dk, &t.dv};
  return *all[tensor];
}
TensorF& TensorAt(AttentionTensors<float>& t, size_t tensor) {
  return const_cast<TensorF&>(TensorAt(static_cast<const AttentionTensors<float>&>(t), tensor));
}

// Calls fn(tensor, b, s, h, flat) for every element of the covered mask that belongs to an output
// of the pass, in mask order.
template <typename Fn>
void ForEachCell(const Workload& w, Fn fn) {
  const size_t cells = static_cast<size_t>(w.batch * w.seq_len * w.q_heads);
  for (size_t t = 0; t < kNames.size(); ++t) {
    if (!InPass(w, t)) continue;
    const int64_t heads = HeadsOf(w, t);
    for (int64_t b = 0; b < w.batch; ++b) {
      for (int64_t s = 0; s < w.seq_len; ++s) {
        for (int64_t h = 0; h < heads; ++h) {
          const size_t cell = static_cast<size_t>((b * w.seq_len + s) * w.q_heads + h);
          fn(t, b, s, h, t * cells + cell);
        }
      }
    }
  }
}

std::vector<float> PackCovered(const std::vector<uint8_t>& covered) {
  std::vector<float> out(covered.size());
  for (size_t i = 0; i < covered.size(); ++i) out[i] = covered[i] ? 1.0f : 0.0f;
  return out;
}

// Each double travels as two floats holding its bits.
std::vector<float> PackTimings(const std::vector<OpTiming>& timings) {
  std::vector<float> out(timings.size() * 4);
  for (size_t i = 0; i < timings.size(); ++i) {
    const double pair[2] = {timings[i].start_s, timings[i].end_s};
    std::memcpy(&out[i * 4], pair, sizeof pair);
  }
  return out;
}

std::vector<OpTiming> UnpackTimings(const std::vector<float>& data) {
  std::vector<OpTiming> out(data.size() / 4);
  for (size_t i = 0; i < out.size(); ++i) {
    double pair[2];
    std::memcpy(pair, &data[i * 4], sizeof pair);
    out[i] = {pair[0], pair[1]};
  }
  return out;
}

// The values of every covered element, in mask order (dim floats each).
std::vector<float> PackValues(const Workload& w, const AttentionTensors<float>& outputs,
                              const std::vector<uint8_t>& covered) {
  std::vector<float> out;
  ForEachCell(w, [&](size_t t, int64_t b, int64_t s, int64_t h, size_t flat) {
    if (!covered[flat]) return;
    const TensorF& tensor = TensorAt(outputs, t);
    const float* first = &tensor.at(b, s, h, 0);
    out.insert(out.end(), first, first + tensor.dim);
  });
  return out;
}

// Copies the elements `covered` marks from `values` (PackValues' order) into `outputs`, marking
// them in `merged`. Fails when `values` has the wrong length.
Status UnpackValues(const Workload& w, const std::vector<uint8_t>& covered,
                    const std::vector<float>& values, int from, AttentionTensors<float>* outputs,
                    std::vector<uint8_t>* merged) {
  size_t at = 0;
  bool short_message = false;
  ForEachCell(w, [&](size_t t, int64_t b, int64_t s, int64_t h, size_t flat) {
    if (!covered[flat] || short_message) return;
    TensorF& tensor = TensorAt(*outputs, t);
    const size_t dim = static_cast<size_t>(tensor.dim);
    if (at + dim > values.size()) {
      short_message = true;
      return;
    }
    std::copy_n(&values[at], dim, &tensor.at(b, s, h, 0));
    (*merged)[flat] = 1;
    at += dim;
  });
  if (short_message || at != values.size()) {
    return Status::Internal("gather: rank " + std::to_string(from) + " sent " +
                            std::to_string(values.size()) +
                            " output values, which do not match its coverage mask");
  }
  return Status::Ok();
}

}  // namespace

Status CheckCoverage(const Workload& w, const std::vector<uint8_t>& covered) {
  if (covered.size() != CoverageSize(w))
    return Status::Internal("coverage mask has the wrong size");
  Status missing;
  ForEachCell(w, [&](size_t t, int64_t, int64_t s, int64_t h, size_t flat) {
    if (missing.ok() && !covered[flat]) {
      missing = Status::Internal(std::string("no rank produced ") + kNames[t] + " for token " +
                                 std::to_string(s) + ", head " + std::to_string(h));
    }
  });
  return missing;
}

Result<std::vector<int>> ExchangeCodes(Transport& transport, int code, Clock::time_point deadline) {
  const int ranks = transport.size();
  std::vector<float> all(static_cast<size_t>(ranks), 0.0f);
  if (transport.rank() == 0) {
    all[0] = static_cast<float>(code);
    for (int r = 1; r < ranks; ++r) {
      std::vector<float> got;
      MESHPLAN_RETURN_IF_ERROR(transport.Recv(r, kGatherTagBase + kTagCodeUp, &got, deadline));
      if (got.size() != 1)
        return Status::Internal("start: rank " + std::to_string(r) + " sent a malformed code");
      all[static_cast<size_t>(r)] = got[0];
    }
    for (int r = 1; r < ranks; ++r)
      MESHPLAN_RETURN_IF_ERROR(transport.Send(r, kGatherTagBase + kTagCodeDown, all));
  } else {
    MESHPLAN_RETURN_IF_ERROR(
        transport.Send(0, kGatherTagBase + kTagCodeUp, {static_cast<float>(code)}));
    MESHPLAN_RETURN_IF_ERROR(transport.Recv(0, kGatherTagBase + kTagCodeDown, &all, deadline));
    if (all.size() != static_cast<size_t>(ranks))
      return Status::Internal("start: rank 0 sent malformed codes");
  }
  return std::vector<int>(all.begin(), all.end());
}

Result<GatheredRun> GatherOutputs(Transport& transport, const Workload& w,
                                  const AttentionTensors<float>& outputs,
                                  const std::vector<uint8_t>& covered,
                                  const std::vector<OpTiming>& timings,
                                  Clock::time_point deadline) {
  if (covered.size() != CoverageSize(w))
    return Status::Internal("gather: coverage mask has the wrong size");
  if (transport.rank() != 0) {
    MESHPLAN_RETURN_IF_ERROR(transport.Send(0, kGatherTagBase + kTagCovered, PackCovered(covered)));
    MESHPLAN_RETURN_IF_ERROR(transport.Send(0, kGatherTagBase + kTagTimings, PackTimings(timings)));
    MESHPLAN_RETURN_IF_ERROR(
        transport.Send(0, kGatherTagBase + kTagValues, PackValues(w, outputs, covered)));
    return GatheredRun{};
  }
  GatheredRun run;
  run.outputs = OutputTensors(w);
  std::vector<uint8_t> merged(covered.size(), 0);
  MESHPLAN_RETURN_IF_ERROR(
      UnpackValues(w, covered, PackValues(w, outputs, covered), 0, &run.outputs, &merged));
  run.timings.push_back(timings);
  for (int r = 1; r < transport.size(); ++r) {
    std::vector<float> mask, times, values;
    MESHPLAN_RETURN_IF_ERROR(transport.Recv(r, kGatherTagBase + kTagCovered, &mask, deadline));
    MESHPLAN_RETURN_IF_ERROR(transport.Recv(r, kGatherTagBase + kTagTimings, &times, deadline));
    MESHPLAN_RETURN_IF_ERROR(transport.Recv(r, kGatherTagBase + kTagValues, &values, deadline));
    if (mask.size() != covered.size() || times.size() % 4 != 0) {
      return Status::Internal("gather: rank " + std::to_string(r) +
                              " sent a malformed coverage mask or timings");
    }
    std::vector<uint8_t> theirs(mask.size());
    for (size_t i = 0; i < mask.size(); ++i) theirs[i] = mask[i] != 0.0f;
    MESHPLAN_RETURN_IF_ERROR(UnpackValues(w, theirs, values, r, &run.outputs, &merged));
    run.timings.push_back(UnpackTimings(times));
  }
  MESHPLAN_RETURN_IF_ERROR(CheckCoverage(w, merged));
  return run;
}

}  // namespace meshplan::exec
