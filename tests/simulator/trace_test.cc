// The Chrome trace of a replayed schedule: valid JSON (checked by a strict parser written here),
// one complete event per op on the right process (rank) and thread (stream), at the replayed
// times, with process and thread names as documented in simulator/trace.h.
#include "simulator/trace.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/base/json_writer.h"
#include "planner/context.h"
#include "planner/schemes/registry.h"
#include "planner/strategy.h"
#include "simulator/simulate.h"
#include "tests/planner/test_cluster.h"

namespace meshplan::sim {
namespace {

// ---- A strict JSON parser (RFC 8259) producing a small DOM --------------------------------------

struct Json {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = kNull;
  bool boolean = false;
  double number = 0;
  std::string text;
  std::vector<Json> items;                            // kArray
  std::vector<std::pair<std::string, Json>> members;  // kObject, in document order

  const Json* Find(const std::string& key) const {
    for (const auto& [k, v] : members) {
      if (k == key) return &v;
    }
    return nullptr;
  }
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& text) : s_(text) {}

  // The whole text is one value with only whitespace around it; otherwise false and error().
  bool Parse(Json* out) {
    SkipSpace();
    if (!Value(out, 0)) return false;
    SkipSpace();
    if (i_ != s_.size()) return Fail("trailing characters");
    return true;
  }
  const std::string& error() const { return error_; }

 private:
  bool Fail(const std::string& why) {
    if (error_.empty()) error_ = why + " at offset " + std::to_string(i_);
    return false;
  }
  void SkipSpace() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }
  bool Literal(const char* word) {
    const std::string w(word);
    if (s_.compare(i_, w.size(), w) != 0) return Fail("bad literal");
    i_ += w.size();
    return true;
  }
  bool Value(Json* out, int depth) {
    if (depth > 64) return Fail("nesting too deep");
    if (i_ >= s_.size()) return Fail("unexpected end");
    const char c = s_[i_];
    if (c == '{') return Object(out, depth);
    if (c == '[') return Array(out, depth);
    if (c == '"') {
      out->kind = Json::kString;
      return String(&out->text);
    }
    if (c == 't') {
      out->kind = Json::kBool;
      out->boolean = true;
      return Literal("true");
    }
    if (c == 'f') {
      out->kind = Json::kBool;
      return Literal("false");
    }
    if (c == 'n') {
      out->kind = Json::kNull;
      return Literal("null");
    }
    return Number(out);
  }
  bool Object(Json* out, int depth) {
    out->kind = Json::kObject;
    ++i_;  // '{'
    SkipSpace();
    if (i_ < s_.size() && s_[i_] == '}') {
      ++i_;
      return true;
    }
    while (true) {
      SkipSpace();
      if (i_ >= s_.size() || s_[i_] != '"') return Fail("expected a key");
      std::string key;
      if (!String(&key)) return false;
      SkipSpace();
      if (i_ >= s_.size() || s_[i_] != ':') return Fail("expected ':'");
      ++i_;
      SkipSpace();
      Json value;
      if (!Value(&value, depth + 1)) return false;
      out->members.emplace_back(std::move(key), std::move(value));
      SkipSpace();
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < s_.size() && s_[i_] == '}') {
        ++i_;
        return true;
      }
      return Fail("expected ',' or '}'");
    }
  }
  bool Array(Json* out, int depth) {
    out->kind = Json::kArray;
    ++i_;  // '['
    SkipSpace();
    if (i_ < s_.size() && s_[i_] == ']') {
      ++i_;
      return true;
    }
    while (true) {
      SkipSpace();
      Json value;
      if (!Value(&value, depth + 1)) return false;
      out->items.push_back(std::move(value));
      SkipSpace();
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < s_.size() && s_[i_] == ']') {
        ++i_;
        return true;
      }
      return Fail("expected ',' or ']'");
    }
  }
  static int Hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  bool String(std::string* out) {
    ++i_;  // opening quote
    while (true) {
      if (i_ >= s_.size()) return Fail("unterminated string");
      const unsigned char c = static_cast<unsigned char>(s_[i_++]);
      if (c == '"') return true;
      if (c < 0x20) return Fail("control character in string");
      if (c != '\\') {
        *out += static_cast<char>(c);
        continue;
      }
      if (i_ >= s_.size()) return Fail("unterminated escape");
      const char e = s_[i_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          *out += e;
          break;
        case 'b':
          *out += '\b';
          break;
        case 'f':
          *out += '\f';
          break;
        case 'n':
          *out += '\n';
          break;
        case 'r':
          *out += '\r';
          break;
        case 't':
          *out += '\t';
          break;
        case 'u': {
          int code = 0;
          for (int k = 0; k < 4; ++k) {
            if (i_ >= s_.size() || Hex(s_[i_]) < 0) return Fail("bad \\u escape");
            code = code * 16 + Hex(s_[i_++]);
          }
          if (code >= 0x80) return Fail("non-ASCII \\u escape (not produced by the writer)");
          *out += static_cast<char>(code);
          break;
        }
        default:
          return Fail("unknown escape");
      }
    }
  }
  bool Digits() {
    const size_t start = i_;
    while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    return i_ > start;
  }
  bool Number(Json* out) {
    const size_t start = i_;
    if (s_[i_] == '-') ++i_;
    if (i_ < s_.size() && s_[i_] == '0') {
      ++i_;
    } else if (!Digits()) {
      return Fail("bad value");
    }
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (!Digits()) return Fail("digits expected after '.'");
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (!Digits()) return Fail("digits expected in exponent");
    }
    out->kind = Json::kNumber;
    out->number = std::stod(s_.substr(start, i_ - start));
    return true;
  }

  const std::string& s_;
  size_t i_ = 0;
  std::string error_;
};

bool IsValidJson(const std::string& text, Json* out = nullptr, std::string* error = nullptr) {
  Json scratch;
  JsonParser parser(text);
  const bool ok = parser.Parse(out != nullptr ? out : &scratch);
  if (error != nullptr) *error = parser.error();
  return ok;
}

TEST(JsonParserTest, AcceptsValidAndRejectsBrokenDocuments) {
  EXPECT_TRUE(IsValidJson(R"({"a":[1,-2.5e3,true,false,null,"x\"y\\z\u0041"],"b":{}})"));
  EXPECT_TRUE(IsValidJson(" [ ] "));
  for (const char* bad :
       {"", "{", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "[01]", "[1.]", "[.5]",
        "\"tab\there\"", "[\"\\x\"]", "[1] [2]", "[tru]", "{\"a\":1}}", "[\"unterminated]"}) {
    EXPECT_FALSE(IsValidJson(bad)) << bad;
  }
}

TEST(JsonWriterTest, EscapedStringsRoundTrip) {
  const std::string nasty =
      std::string("quote \" backslash \\ newline \n tab \t bell ") + '\a' + " end";
  JsonWriter j;
  j.BeginObject();
  j.Key(nasty);
  j.String(nasty);
  j.EndObject();
  Json doc;
  std::string error;
  ASSERT_TRUE(IsValidJson(j.str(), &doc, &error)) << error << "\n" << j.str();
  ASSERT_EQ(doc.members.size(), 1u);
  EXPECT_EQ(doc.members[0].first, nasty);
  EXPECT_EQ(doc.members[0].second.text, nasty);
}

// ---- Traces of replayed planner schedules -------------------------------------------------------

TEST(TraceOpNameTest, NamesFollowTheDocumentedForms) {
  Op compute;
  compute.kind = OpKind::kCompute;
  compute.q_shard = 3;
  compute.kv_shard = 6;
  EXPECT_EQ(TraceOpName(compute), "compute Q3xKV6");
  Op send;
  send.kind = OpKind::kSend;
  send.tensors = kTensorKV;
  send.peer = 5;
  EXPECT_EQ(TraceOpName(send), "send K+V -> 5");
  Op recv = send;
  recv.kind = OpKind::kRecv;
  recv.peer = 4;
  EXPECT_EQ(TraceOpName(recv), "recv K+V <- 4");
  Op a2a;
  a2a.kind = OpKind::kAllToAll;
  a2a.tensors = kTensorQ | kTensorK | kTensorV;
  EXPECT_EQ(TraceOpName(a2a), "all-to-all Q+K+V");
}

struct Replay {
  Schedule schedule;
  std::vector<int64_t> rank_to_gpu;
  SimResult result;
};

// 8 GPUs: 2 nodes of 4. A small causal fwd+bwd workload.
class TraceTest : public ::testing::Test {
 protected:
  TraceTest() : topology_(meshplan::testing::SmallCluster(4, 2)) {
    workload_.batch = 1;
    workload_.seq_len = 4096;
    workload_.q_heads = 8;
    workload_.kv_heads = 4;
    workload_.head_dim = 64;
    workload_.mask = Mask::Causal();
    workload_.pass = Pass::kForwardBackward;
  }

  Replay Run(SchemeParams params) {
    const planner::PlanContext ctx(workload_, topology_);
    const auto strategy = planner::MakeStrategy(params.scheme);
    const planner::Estimate e = strategy->Evaluate(ctx, params);
    EXPECT_TRUE(e.valid) << e.reason;
    Replay out;
    auto schedule = strategy->Expand(ctx, params);
    EXPECT_TRUE(schedule.ok()) << schedule.status().message();
    out.schedule = std::move(schedule).value();
    const Placement placement(planner::RankDims(params), params.placement);
    for (int64_t r = 0; r < out.schedule.num_ranks; ++r)
      out.rank_to_gpu.push_back(placement.GpuOf(r));
    auto result = Simulate(out.schedule, topology_, out.rank_to_gpu, workload_.dtype);
    EXPECT_TRUE(result.ok()) << result.status().message();
    if (result.ok()) out.result = std::move(result).value();
    return out;
  }

  // Parses the trace and checks every documented property against the schedule and the replay.
  void CheckTrace(const Replay& replay) {
    const Schedule& schedule = replay.schedule;
    ASSERT_EQ(replay.result.op_times.size(), schedule.ranks.size());
    const std::string trace = ChromeTrace(schedule, replay.result, replay.rank_to_gpu);
    Json doc;
    std::string error;
    ASSERT_TRUE(IsValidJson(trace, &doc, &error)) << error;
    ASSERT_EQ(doc.kind, Json::kObject);
    const Json* unit = doc.Find("displayTimeUnit");
    ASSERT_NE(unit, nullptr);
    EXPECT_EQ(unit->text, "ns");
    const Json* events = doc.Find("traceEvents");
    ASSERT_NE(events, nullptr);
    ASSERT_EQ(events->kind, Json::kArray);

    int64_t complete = 0;
    std::set<std::pair<int64_t, int64_t>> seen;                       // (rank, op)
    std::map<int64_t, std::string> process_names;                     // pid -> name
    std::map<std::pair<int64_t, int64_t>, std::string> thread_names;  // (pid, tid) -> name
    for (const Json& ev : events->items) {
      ASSERT_EQ(ev.kind, Json::kObject);
      const Json* ph = ev.Find("ph");
      const Json* pid = ev.Find("pid");
      const Json* tid = ev.Find("tid");
      ASSERT_TRUE(ph != nullptr && pid != nullptr && tid != nullptr);
      const auto rank = static_cast<int64_t>(pid->number);
      ASSERT_GE(rank, 0);
      ASSERT_LT(rank, schedule.num_ranks);
      if (ph->text == "M") {
        const std::string name = ev.Find("name")->text;
        const Json* args = ev.Find("args");
        ASSERT_NE(args, nullptr);
        if (name == "process_name") process_names[rank] = args->Find("name")->text;
        if (name == "thread_name")
          thread_names[{rank, static_cast<int64_t>(tid->number)}] = args->Find("name")->text;
        continue;
      }
      ASSERT_EQ(ph->text, "X");
      ++complete;
      const Json* args = ev.Find("args");
      ASSERT_NE(args, nullptr);
      const auto index = static_cast<int64_t>(args->Find("op")->number);
      ASSERT_GE(index, 0);
      ASSERT_LT(index, static_cast<int64_t>(schedule.ranks[rank].ops.size()));
      EXPECT_TRUE(seen.insert({rank, index}).second)
          << "op listed twice: rank " << rank << " op " << index;
      const Op& op = schedule.ranks[rank].ops[index];
      const OpTime& t = replay.result.op_times[rank][index];
      EXPECT_EQ(static_cast<int64_t>(tid->number), static_cast<int64_t>(op.stream));
      EXPECT_EQ(ev.Find("name")->text, TraceOpName(op));
      EXPECT_EQ(ev.Find("cat")->text, std::string(OpKindName(op.kind)));
      // Microseconds from integer nanoseconds.
      EXPECT_NEAR(ev.Find("ts")->number, static_cast<double>(t.start) / 1000.0,
                  1e-6 * (1 + t.start / 1000.0));
      EXPECT_NEAR(ev.Find("dur")->number, static_cast<double>(t.end - t.start) / 1000.0,
                  1e-6 * (1 + t.end / 1000.0));
      EXPECT_EQ(static_cast<int64_t>(args->Find("bytes")->number), op.bytes);
      EXPECT_EQ(args->Find("flops")->number, op.flops);
      EXPECT_EQ(static_cast<int64_t>(args->Find("peer")->number), op.peer);
      EXPECT_EQ(static_cast<int64_t>(args->Find("step")->number), op.step);
      EXPECT_EQ(args->Find("phase")->text, op.phase == Phase::kForward ? "fwd" : "bwd");
    }
    EXPECT_EQ(complete, schedule.TotalOps());
    EXPECT_EQ(static_cast<int64_t>(seen.size()), schedule.TotalOps());

    for (int64_t r = 0; r < schedule.num_ranks; ++r) {
      EXPECT_EQ(process_names[r], "rank " + std::to_string(r) + " (GPU " +
                                      std::to_string(replay.rank_to_gpu[r]) + ")");
      for (const Op& op : schedule.ranks[r].ops) {
        const auto key = std::make_pair(r, static_cast<int64_t>(op.stream));
        ASSERT_EQ(thread_names.count(key), 1u)
            << "rank " << r << " stream " << static_cast<int>(op.stream);
        EXPECT_EQ(thread_names[key], std::string(StreamName(op.stream)));
      }
    }
  }

  Workload workload_;
  Topology topology_;
};

TEST_F(TraceTest, RingForwardBackward) {
  SchemeParams params;
  params.scheme = Scheme("ring");
  params.ring = 8;
  params.layout = Layout::kZigzag;
  params.placement = CanonicalPlacement(planner::RankDims(params));
  const Replay replay = Run(params);
  ASSERT_GT(replay.schedule.TotalOps(), 0);
  // A ring moves K and V point to point: the trace has sends.
  bool has_send = false;
  for (const Op& op : replay.schedule.ranks[0].ops) has_send |= op.kind == OpKind::kSend;
  EXPECT_TRUE(has_send);
  CheckTrace(replay);
}

TEST_F(TraceTest, MeshWithNonCanonicalPlacement) {
  SchemeParams params;
  params.scheme = Scheme("mesh");
  params.tile_a = 2;
  params.tile_b = 4;
  params.layout = Layout::kZigzag;
  params.placement = {"kv", "q"};  // not the canonical q-innermost order: GPU ids differ from ranks
  const Replay replay = Run(params);
  bool permuted = false;
  for (size_t r = 0; r < replay.rank_to_gpu.size(); ++r)
    permuted |= replay.rank_to_gpu[r] != static_cast<int64_t>(r);
  EXPECT_TRUE(permuted);
  CheckTrace(replay);
}

TEST_F(TraceTest, UlyssesCollectivesGetOneEventEach) {
  workload_.kv_heads = 8;
  SchemeParams params;
  params.scheme = Scheme("ulysses");
  params.ulysses = 8;
  params.layout = Layout::kContiguous;
  params.placement = CanonicalPlacement(planner::RankDims(params));
  const Replay replay = Run(params);
  bool has_a2a = false;
  for (const Op& op : replay.schedule.ranks[0].ops) has_a2a |= op.kind == OpKind::kAllToAll;
  EXPECT_TRUE(has_a2a);
  CheckTrace(replay);
}

TEST_F(TraceTest, OnlyTheChosenRanksAppear) {
  SchemeParams params;
  params.scheme = Scheme("ring");
  params.ring = 8;
  params.layout = Layout::kZigzag;
  params.placement = CanonicalPlacement(planner::RankDims(params));
  const Replay replay = Run(params);
  const std::string trace = ChromeTrace(replay.schedule, replay.result, replay.rank_to_gpu, {1, 6});
  Json doc;
  std::string error;
  ASSERT_TRUE(IsValidJson(trace, &doc, &error)) << error;
  std::set<int64_t> pids;
  int64_t complete = 0;
  for (const Json& ev : doc.Find("traceEvents")->items) {
    pids.insert(static_cast<int64_t>(ev.Find("pid")->number));
    complete += ev.Find("ph")->text == "X";
  }
  EXPECT_EQ(pids, (std::set<int64_t>{1, 6}));
  // One complete event per op of ranks 1 and 6.
  EXPECT_EQ(complete, static_cast<int64_t>(replay.schedule.ranks[1].ops.size() +
                                           replay.schedule.ranks[6].ops.size()));
}

}  // namespace
}  // namespace meshplan::sim
