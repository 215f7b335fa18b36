#include "simulator/trace.h"

#include <charconv>
#include <cstdint>
#include <string>

#include "core/base/json_writer.h"

namespace meshplan::sim {
namespace {

constexpr StreamId kStreams[] = {StreamId::kCompute, StreamId::kSend, StreamId::kRecv,
                                 StreamId::kCollective};

// Nanoseconds as microseconds with exactly three decimals, so no precision is lost or invented.
void AppendMicroseconds(SimTime ns, std::string* out) {
  char buffer[32];
  char* p = buffer;
  uint64_t magnitude = static_cast<uint64_t>(ns);
  if (ns < 0) {
    *p++ = '-';
    magnitude = 0 - magnitude;
  }
  p = std::to_chars(p, buffer + sizeof buffer, magnitude / 1000).ptr;
  const auto fraction = static_cast<unsigned>(magnitude % 1000);
  *p++ = '.';
  *p++ = static_cast<char>('0' + fraction / 100);
  *p++ = static_cast<char>('0' + fraction / 10 % 10);
  *p++ = static_cast<char>('0' + fraction % 10);
  out->assign(buffer, p);
}

void Metadata(JsonWriter& j, const char* name, int64_t pid, int64_t tid, const char* arg,
              const std::string* text, int64_t number) {
  j.BeginObject();
  j.Key("name");
  j.String(name);
  j.Key("ph");
  j.String("M");
  j.Key("pid");
  j.Int(pid);
  j.Key("tid");
  j.Int(tid);
  j.Key("args");
  j.BeginObject();
  j.Key(arg);
  if (text != nullptr) {
    j.String(*text);
  } else {
    j.Int(number);
  }
  j.EndObject();
  j.EndObject();
}

}  // namespace

std::string TraceOpName(const Op& op) {
  std::string name(OpKindName(op.kind));
  switch (op.kind) {
    case OpKind::kCompute:
      return name + " Q" + std::to_string(op.q_shard) + "xKV" + std::to_string(op.kv_shard);
    case OpKind::kMerge:
      name += " " + TensorNames(op.tensors);
      if (op.q_shard >= 0) name += " Q" + std::to_string(op.q_shard);
      if (op.kv_shard >= 0) name += " KV" + std::to_string(op.kv_shard);
      return name;
    case OpKind::kSend:
      return name + " " + TensorNames(op.tensors) + " -> " + std::to_string(op.peer);
    case OpKind::kRecv:
      return name + " " + TensorNames(op.tensors) + " <- " + std::to_string(op.peer);
    case OpKind::kAllGather:
    case OpKind::kReduceScatter:
    case OpKind::kAllToAll:
      return name + " " + TensorNames(op.tensors);
  }
  return name;
}

std::string ChromeTrace(const Schedule& schedule, const SimResult& result,
                        const std::vector<int64_t>& rank_to_gpu,
                        const std::vector<int64_t>& only_ranks) {
  std::vector<int64_t> ranks = only_ranks;
  if (ranks.empty()) {
    for (size_t r = 0; r < schedule.ranks.size(); ++r) ranks.push_back(static_cast<int64_t>(r));
  }
  size_t ops = 0;
  for (int64_t r : ranks) ops += schedule.ranks[static_cast<size_t>(r)].ops.size();
  JsonWriter j;
  j.Reserve(ops * 200 + ranks.size() * 400 + 64);
  std::string number;  // scratch for ts and dur
  j.BeginObject();
  j.Key("traceEvents");
  j.BeginArray();
  for (const int64_t rank : ranks) {
    const size_t r = static_cast<size_t>(rank);
    const RankProgram& program = schedule.ranks[r];
    const int64_t pid = static_cast<int64_t>(r);
    const std::string process = "rank " + std::to_string(r) + " (GPU " +
                                std::to_string(r < rank_to_gpu.size() ? rank_to_gpu[r] : -1) + ")";
    Metadata(j, "process_name", pid, 0, "name", &process, 0);
    Metadata(j, "process_sort_index", pid, 0, "sort_index", nullptr, pid);
    bool used[4] = {false, false, false, false};
    for (const Op& op : program.ops) used[static_cast<int>(op.stream) & 3] = true;
    for (StreamId stream : kStreams) {
      const int tid = static_cast<int>(stream);
      if (!used[tid]) continue;
      const std::string thread(StreamName(stream));
      Metadata(j, "thread_name", pid, tid, "name", &thread, 0);
      Metadata(j, "thread_sort_index", pid, tid, "sort_index", nullptr, tid);
    }
    const std::vector<OpTime>* times = r < result.op_times.size() ? &result.op_times[r] : nullptr;
    for (size_t i = 0; i < program.ops.size(); ++i) {
      const Op& op = program.ops[i];
      const OpTime t = times != nullptr && i < times->size() ? (*times)[i] : OpTime{};
      j.BeginObject();
      j.Key("name");
      j.String(TraceOpName(op));
      j.Key("cat");
      j.String(OpKindName(op.kind));
      j.Key("ph");
      j.String("X");
      j.Key("pid");
      j.Int(pid);
      j.Key("tid");
      j.Int(static_cast<int>(op.stream));
      j.Key("ts");
      AppendMicroseconds(t.start, &number);
      j.Raw(number);
      j.Key("dur");
      AppendMicroseconds(t.end - t.start, &number);
      j.Raw(number);
      j.Key("args");
      j.BeginObject();
      j.Key("op");
      j.Int(static_cast<long long>(i));
      j.Key("bytes");
      j.Int(op.bytes);
      j.Key("flops");
      j.Number(op.flops);
      j.Key("peer");
      j.Int(op.peer);
      j.Key("step");
      j.Int(op.step);
      j.Key("phase");
      j.String(op.phase == Phase::kForward ? "fwd" : "bwd");
      j.EndObject();
      j.EndObject();
    }
  }
  j.EndArray();
  j.Key("displayTimeUnit");
  j.String("ns");
  j.EndObject();
  std::string out = j.Take();
  out += '\n';
  return out;
}

}  // namespace meshplan::sim
