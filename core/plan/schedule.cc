#include "core/plan/schedule.h"

namespace meshplan {

std::string_view OpKindName(OpKind kind) {
  switch (kind) {
    case OpKind::kCompute:
      return "compute";
    case OpKind::kMerge:
      return "merge";
    case OpKind::kSend:
      return "send";
    case OpKind::kRecv:
      return "recv";
    case OpKind::kAllGather:
      return "all-gather";
    case OpKind::kReduceScatter:
      return "reduce-scatter";
    case OpKind::kAllToAll:
      return "all-to-all";
  }
  return "?";
}

std::string_view StreamName(StreamId stream) {
  switch (stream) {
    case StreamId::kCompute:
      return "compute";
    case StreamId::kSend:
      return "send";
    case StreamId::kRecv:
      return "recv";
    case StreamId::kCollective:
      return "collective";
  }
  return "?";
}

std::string TensorNames(uint16_t tensors) {
  static const char* kNames[] = {"Q", "K", "V", "O", "LSE", "dO", "D", "dQ", "dK", "dV"};
  std::string out;
  for (int bit = 0; bit < 10; ++bit) {
    if (tensors & (1u << bit)) out += (out.empty() ? "" : "+") + std::string(kNames[bit]);
  }
  return out;
}

uint32_t RankProgram::Add(Op op, std::initializer_list<uint32_t> op_deps) {
  op.dep_begin = static_cast<uint32_t>(deps.size());
  op.dep_count = static_cast<uint32_t>(op_deps.size());
  deps.insert(deps.end(), op_deps.begin(), op_deps.end());
  ops.push_back(op);
  return static_cast<uint32_t>(ops.size() - 1);
}

uint32_t RankProgram::Add(Op op, const std::vector<uint32_t>& op_deps) {
  op.dep_begin = static_cast<uint32_t>(deps.size());
  op.dep_count = static_cast<uint32_t>(op_deps.size());
  deps.insert(deps.end(), op_deps.begin(), op_deps.end());
  ops.push_back(op);
  return static_cast<uint32_t>(ops.size() - 1);
}

int64_t Schedule::TotalOps() const {
  int64_t total = 0;
  for (const RankProgram& r : ranks) total += static_cast<int64_t>(r.ops.size());
  return total;
}

}  // namespace meshplan
