#include "simulator/replay_program.h"

#include <algorithm>
#include <string>

namespace meshplan::sim {

Result<ReplayProgram> MakeReplayProgram(const RankProgram& prog, int64_t rank, int64_t num_ranks) {
  auto where = [&](size_t i) {
    return "rank " + std::to_string(rank) + " op " + std::to_string(i);
  };
  ReplayProgram st;
  const size_t ops = prog.ops.size();
  st.op.assign(ops, OpState{});
  st.ops.resize(ops);
  st.waits.resize(ops);
  std::vector<int32_t> count(ops + 1, 0);
  int32_t last_on_stream[kReplayStreams] = {-1, -1, -1, -1};
  for (size_t i = 0; i < ops; ++i) {
    const Op& op = prog.ops[i];
    if (op.dep_begin + op.dep_count > prog.deps.size())
      return Status::Invalid(where(i) + ": deps out of range");
    st.op[i].deps_left = static_cast<int32_t>(op.dep_count);
    st.waits[i] = static_cast<DepCount>(std::min<uint32_t>(op.dep_count, kManyDeps));
    for (uint32_t d = 0; d < op.dep_count; ++d) {
      const uint32_t dep = prog.deps[op.dep_begin + d];
      if (dep >= i) return Status::Invalid(where(i) + ": dep does not point back");
      ++count[dep + 1];
    }
    if ((op.kind == OpKind::kSend || op.kind == OpKind::kRecv) &&
        (op.peer < 0 || op.peer >= num_ranks)) {
      return Status::Invalid(where(i) + ": peer out of range");
    }
    const int stream = static_cast<int>(op.stream);
    if (last_on_stream[stream] < 0) {
      st.stream_first[stream] = static_cast<int32_t>(i);
    } else {
      st.op[last_on_stream[stream]].next_on_stream = static_cast<int32_t>(i);
    }
    last_on_stream[stream] = static_cast<int32_t>(i);

    ReplayOp& out = st.ops[i];
    out.kind = op.kind;
    out.stream_phase = static_cast<uint8_t>(static_cast<uint8_t>(op.stream) |
                                            (static_cast<uint8_t>(op.phase) << 2));
    out.kernels = op.kernels;
    switch (op.kind) {
      case OpKind::kCompute:
        out.value = op.flops;
        out.peer_or_group = std::bit_cast<int32_t>(op.cut_rows_per_pair);
        if (op.bytes > 0) {
          if (st.partial_bytes.empty()) st.partial_bytes.assign(prog.ops.size(), 0.0);
          st.partial_bytes[i] = static_cast<double>(op.bytes);
        }
        if (op.sliced_bytes > 0) {
          if (st.sliced_bytes.empty()) st.sliced_bytes.assign(prog.ops.size(), 0.0);
          st.sliced_bytes[i] = static_cast<double>(op.sliced_bytes);
        }
        break;
      case OpKind::kMerge: {
        // The partial's size is its message's.
        double bytes = 0;
        for (uint32_t d = 0; d < op.dep_count; ++d) {
          const Op& dep = prog.ops[prog.deps[op.dep_begin + d]];
          if (dep.kind == OpKind::kRecv) bytes = std::max(bytes, static_cast<double>(dep.bytes));
        }
        out.value = bytes;
        break;
      }
      case OpKind::kSend:
      case OpKind::kRecv:
        out.value = static_cast<double>(op.bytes);
        out.peer_or_group = op.peer;
        break;
      default:
        out.value = static_cast<double>(op.bytes);
        out.peer_or_group = op.group;
        break;
    }
  }
  for (size_t i = 1; i <= ops; ++i) count[i] += count[i - 1];
  st.dependents.assign(static_cast<size_t>(count[ops]), 0);
  std::vector<int32_t> fill(count.begin(), count.end() - 1);
  for (size_t i = 0; i < ops; ++i) {
    const Op& op = prog.ops[i];
    for (uint32_t d = 0; d < op.dep_count; ++d)
      st.dependents[fill[prog.deps[op.dep_begin + d]]++] = static_cast<int32_t>(i);
  }
  st.dependents_begin = std::move(count);
  return st;
}

}  // namespace meshplan::sim
