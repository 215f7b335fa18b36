// The meshplan binary end to end: exit codes, one-line errors naming the problem, output files.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "executor/io/npy.h"
#include "executor/kernels/reference.h"
#include "planner/plan_file.h"
#include "planner/schemes/registry.h"
#include "tests/tools/cli_fixture.h"
#include "tests/tools/json_reader.h"

namespace meshplan {
namespace {

namespace fs = std::filesystem;
using testing::Json;

using RunResult = testing::CliResult;

class Cli : public testing::CliFixture {
 protected:
  // One invalid-input failure: exit 2, a single stderr line that contains every `needle`.
  void ExpectInvalid(const std::string& args, std::initializer_list<std::string> needles) {
    const RunResult r = Run(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    ASSERT_FALSE(r.err.empty()) << args;
    EXPECT_EQ(r.err.find("meshplan: error: "), 0u) << r.err;
    for (const std::string& n : needles)
      EXPECT_NE(r.err.find(n), std::string::npos) << args << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "expected one line:\n" << r.err;
  }
};

TEST_F(Cli, VersionAndHelp) {
  RunResult r = Run("--version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("meshplan 0."), std::string::npos) << r.out;
  for (const char* args :
       {"--help", "plan --help", "simulate --help", "topo --help", "topo show --help",
        "topo validate --help", "execute --help", "sweep --help", "fit --help"}) {
    r = Run(args);
    EXPECT_EQ(r.exit_code, 0) << args;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << args << r.out;
  }
  EXPECT_NE(Run("plan --help").out.find("--kv-heads"), std::string::npos);
  EXPECT_NE(Run("execute --help").out.find("1e-4"), std::string::npos);  // the check's tolerance
}

TEST_F(Cli, DefaultPlanRanksSchemesAndNamesTheBest) {
  const RunResult r = Run("plan --top 5");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("256 x H100"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("S=1M Hq=64 Hkv=8 d=128 bf16 causal fwd+bwd"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("best that fits: #1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ulysses: head-parallel degree 256 exceeds the 8 KV heads"),
            std::string::npos)
      << r.out;
}

TEST_F(Cli, MachineFormats) {
  RunResult r = Run("plan --format json --top 3 --seq 256K");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.front(), '{');
  EXPECT_NE(r.out.find("\"plans\":["), std::string::npos);
  EXPECT_NE(r.out.find("\"not_applicable\":[{\"scheme\":\"ulysses\""), std::string::npos);
  r = Run("plan --format csv --top 3 --seq 256K");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("rank,scheme,parameters,time_s", 0), 0u) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 4);  // header + 3 rows
}

TEST_F(Cli, OutWritesALoadablePlanAndExplainBreaksItDown) {
  const std::string plan = (dir_ / "plan.toml").string();
  RunResult r =
      Run("plan -t " + std::string(MESHPLAN_SOURCE_DIR) +
          "/topologies/dgx-h100-4node.toml --seq 512K --schemes mesh --explain --out " + plan);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("time model"), std::string::npos);
  EXPECT_NE(r.out.find("rank 0's first ops"), std::string::npos);
  auto loaded = planner::LoadPlanFile(plan);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->params.scheme, Scheme("mesh"));
  EXPECT_EQ(loaded->num_gpus, 32);
  EXPECT_EQ(loaded->workload.seq_len, 512 * 1024);
  // Nothing but the plan was left in the directory (no temporary files).
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    if (entry.path().filename() != "stdout" && entry.path().filename() != "stderr") ++files;
  }
  EXPECT_EQ(files, 1);
}

TEST_F(Cli, OutIntoAMissingDirectoryFailsWithoutWritingAnything) {
  const RunResult r = Run("plan --seq 256K --out " + (dir_ / "no/such/dir/plan.toml").string());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("no/such/dir/plan.toml"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "no"));
}

TEST_F(Cli, BadWorkloadFlags) {
  ExpectInvalid("plan --heads 60", {"heads (60) must be a multiple of kv-heads (8)"});
  ExpectInvalid("plan --seq 0", {"--seq", "must be positive"});
  ExpectInvalid("plan --seq=-4096", {"--seq", "must be positive"});
  ExpectInvalid("plan --seq 1.5M", {"--seq", "not a valid count"});
  ExpectInvalid("plan --batch 0", {"--batch", "must be positive"});
  ExpectInvalid("plan --head-dim abc", {"--head-dim", "not a valid count"});
  ExpectInvalid("plan --dtype int4", {"--dtype", "unknown dtype 'int4'"});
  const std::string bf16_only = Write("bf16.toml", R"(name = "bf16-only"
[gpu]
model = "G"
memory_GB = 80
hbm_GBps = 3000
peak_tflops = { bf16 = 900 }
attention_efficiency = [[1024, 0.5]]
[[level]]
name = "nvlink"
kind = "switch"
group_size = 8
bandwidth_GBps = 400
latency_us = 1
)");
  ExpectInvalid("plan -t " + bf16_only + " --dtype fp8",
                {"bf16.toml", "gpu.peak_tflops", "no entry for fp8"});
  ExpectInvalid("plan --pass sideways", {"--pass", "unknown pass"});
  ExpectInvalid("plan --mask diagonal", {"--mask", "unknown mask 'diagonal'"});
  ExpectInvalid("plan --mask window:0", {"window", "must be positive"});
  ExpectInvalid("plan --mask docs:" + (dir_ / "missing.txt").string(),
                {"missing.txt", "cannot open"});
  const std::string docs = Write("docs.txt", "1K 2K\n");
  ExpectInvalid("plan --seq 4K --mask docs:" + docs, {"docs.txt", "sum to 3072 tokens", "4096"});
  const std::string bad_docs = Write("bad_docs.txt", "1K\n-5\n");
  ExpectInvalid("plan --seq 4K --mask docs:" + bad_docs, {"bad_docs.txt:2", "document length"});
}

TEST_F(Cli, BadPlanRequests) {
  ExpectInvalid("plan --schemes ring,spiral", {"--schemes", "unknown scheme 'spiral'"});
  ExpectInvalid("plan --format xml", {"--format", "xml"});
  ExpectInvalid("plan --seq 256K --pick 0 --out x.toml", {"--pick"});
  ExpectInvalid("plan --seq 256K --explain 100000", {"--explain"});
  ExpectInvalid("plan --reserve-gib=-1", {"--reserve-gib"});
  // Ulysses over 256 GPUs needs 256 KV heads.
  ExpectInvalid(
      "plan --schemes ulysses",
      {"no scheme has a valid plan", "ulysses: head-parallel degree 256 exceeds the 8 KV heads"});
  ExpectInvalid("plan --heads 16 --kv-heads 1 --schemes usp,mesh-ulysses",
                {"usp: head-parallel degree 2 exceeds the 1 KV heads", "mesh-ulysses: "});
  // 1000 tokens cannot be cut into 256 (or 512 zigzag) equal shards.
  ExpectInvalid("plan --seq 1000",
                {"no scheme has a valid plan", "ring: sequence length 1000 is not divisible by 512",
                 "nearest multiples: 512 and 1024"});
  // Issue 32: a decimal length is refused once per reason, not once per scheme, with the way out.
  {
    const RunResult r = Run("plan --seq 1000000");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("nearest multiples: 999936 and 1000448; allgather-kv, loongtrain, "),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("--seq-round up or down"), std::string::npos) << r.err;
    EXPECT_LT(r.err.size(), 800u) << r.err;
  }
  // --seq-round takes the nearest length every layout splits on 256 GPUs: a multiple of 512.
  {
    const RunResult up = Run("plan --seq 1000000 --seq-round up --top 1 --format json");
    EXPECT_EQ(up.exit_code, 0) << up.err;
    EXPECT_NE(up.out.find("S=977K"), std::string::npos)
        << up.out.substr(0, 300);  // 1000448 = 977 x 1024
    EXPECT_NE(up.err.find("--seq 1000000 rounded up to 1000448"), std::string::npos) << up.err;
    const RunResult down = Run("plan --seq 1000000 --seq-round down --top 1 --format json");
    EXPECT_NE(down.out.find("S=999936"), std::string::npos) << down.out.substr(0, 300);
    ExpectInvalid("plan --seq-round sideways", {"--seq-round: 'sideways' is not up or down"});
  }
  ExpectInvalid("plan --frobnicate", {"frobnicate"});
}

TEST_F(Cli, BadTopologyFiles) {
  ExpectInvalid("plan -t " + (dir_ / "nope.toml").string(), {"nope.toml", "cannot open"});
  const std::string unknown = Write("unknown.toml", std::string(R"(name = "x"
colour = "blue"
)"));
  ExpectInvalid("topo validate " + unknown, {"unknown.toml", "colour"});
  std::string text = Read(std::string(MESHPLAN_SOURCE_DIR) + "/topologies/dgx-h100-4node.toml");
  const size_t at = text.find("group_size = 8");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 14, "group_size = 0");
  const std::string zero = Write("zero.toml", text);
  ExpectInvalid("plan -t " + zero, {"zero.toml", "level[0].group_size", "at least 1"});
  ExpectInvalid("topo validate " + zero, {"zero.toml", "group_size"});
  const std::string syntax = Write("syntax.toml", "name = \"x\"\n[gpu\n");
  ExpectInvalid("topo show " + syntax, {"syntax.toml:2"});
}

TEST_F(Cli, TopoShowAndValidate) {
  RunResult r = Run("topo show");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("256 x H100"), std::string::npos) << r.out;
  r = Run("topo show --format toml");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string round_trip = Write("rt.toml", r.out);
  r = Run("topo validate " + round_trip);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ok (256 GPUs, 2 levels)"), std::string::npos) << r.out;
}

// ---- meshplan simulate
// ----------------------------------------------------------------------------

std::string FourNode() {
  return std::string(MESHPLAN_SOURCE_DIR) + "/topologies/dgx-h100-4node.toml";
}

TEST_F(Cli, SimulateAPlanFileFromPlanOut) {
  const std::string plan = (dir_ / "plan.toml").string();
  RunResult r = Run("plan -t " + FourNode() + " --seq 256K --quiet --out " + plan);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // No --topology: the plan names its (existing) topology file.
  r = Run("simulate " + plan);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("simulated"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("estimated"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("32 x H100"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("critical path"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("events"), std::string::npos) << r.out;
  // --ranks limits the slowest-ranks listing: its header plus 3 rows before the next blank line.
  r = Run("simulate " + plan + " --ranks 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t at = r.out.find("slowest ranks:\n");
  ASSERT_NE(at, std::string::npos);
  const std::string listing = r.out.substr(at, r.out.find("\n\n", at) + 1 - at);
  EXPECT_EQ(std::count(listing.begin(), listing.end(), '\n'), 1 + 1 + 3) << listing;

  r = Run("simulate " + plan + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.front(), '{');
  EXPECT_NE(r.out.find("\"simulated_s\":"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"estimated_s\":"), std::string::npos) << r.out;
  // The metric,value list is `--format metrics` since `--format csv` became one row per run
  // (issue 32); the same assertions on it.
  r = Run("simulate " + plan + " --format metrics");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("metric,value\n", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("\nsimulated_s,"), std::string::npos) << r.out;
  r = Run("simulate " + plan + " --format csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("plan,scheme,parameters,", 0), 0u) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2) << r.out;  // header and one row
}

TEST_F(Cli, SimulateCsvRowsAppendUnderOneHeader) {
  const std::string plan = (dir_ / "plan.toml").string();
  ASSERT_EQ(Run("plan -t " + FourNode() + " --seq 256K --schemes ring -q --out " + plan).exit_code,
            0);
  const std::string csv = (dir_ / "runs.csv").string();
  RunResult r = Run("simulate " + plan + " --format csv -o " + csv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;  // the report went to the file
  const std::string first = Read(csv);
  const std::string header = first.substr(0, first.find('\n') + 1);
  EXPECT_EQ(header.rfind("plan,scheme,parameters,", 0), 0u) << first;
  r = Run("simulate " + plan + " --format csv -o " + csv + " --append -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  const std::string both = Read(csv);
  // One header, two rows: the file as it was, then one more row of the same plan.
  EXPECT_EQ(both.rfind(first, 0), 0u) << both;
  EXPECT_EQ(std::count(both.begin(), both.end(), '\n'), 3) << both;
  EXPECT_EQ(both.find(header, 1), std::string::npos) << both;
  // On stdout, --append leaves the header out (for >> FILE).
  r = Run("simulate " + plan + " --format csv --append");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind(plan + ",", 0), 0u) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  // A file with another header is refused, named, and left as it was.
  const std::string other = Write("other.csv", "a,b\n1,2\n");
  r = Run("simulate " + plan + " --format csv --append -o " + other);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(other + ": --append: the file's header is not this report's"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(Read(other), "a,b\n1,2\n");
  // --append means nothing to the other formats.
  r = Run("simulate " + plan + " --append");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--append: only with --format csv"), std::string::npos) << r.err;
}

TEST_F(Cli, SimulateWritesATrace) {
  const std::string plan = (dir_ / "plan.toml").string();
  ASSERT_EQ(Run("plan -t " + FourNode() + " --seq 256K --schemes ring -q --out " + plan).exit_code,
            0);
  const std::string trace = (dir_ / "trace.json").string();
  const RunResult r = Run("simulate " + plan + " --topology " + FourNode() + " --trace " + trace);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(fs::exists(trace));
  const std::string text = Read(trace);
  EXPECT_EQ(text.rfind("{\"traceEvents\":[", 0), 0u) << text.substr(0, 80);
  EXPECT_NE(text.find("\"ph\":\"X\""), std::string::npos);
  EXPECT_NE(text.find("\"displayTimeUnit\":\"ns\""), std::string::npos);
}

TEST_F(Cli, SimulateTraceRanksPicksTheRanksAndRefusesBadLists) {
  // The 4-node DGX H100 file has 32 GPUs: under the default of 64 every rank is traced, no note.
  const std::string plan = (dir_ / "plan.toml").string();
  ASSERT_EQ(Run("plan -t " + FourNode() + " --seq 256K --schemes ring -q --out " + plan).exit_code,
            0);
  const std::string trace = (dir_ / "trace.json").string();
  RunResult r = Run("simulate " + plan + " -t " + FourNode() + " --trace " + trace);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("note:"), std::string::npos) << r.err;
  EXPECT_NE(Read(trace).find("\"pid\":31,"), std::string::npos);
  r = Run("simulate " + plan + " -t " + FourNode() + " --trace " + trace + " --trace-ranks 2-3,30");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string text = Read(trace);
  for (int rank : {2, 3, 30})
    EXPECT_NE(text.find("\"pid\":" + std::to_string(rank) + ","), std::string::npos) << rank;
  for (int rank : {0, 1, 4, 29, 31})
    EXPECT_EQ(text.find("\"pid\":" + std::to_string(rank) + ","), std::string::npos) << rank;
  for (const char* bad : {"32", "5-2", "x", "-1", ""}) {
    r = Run("simulate " + plan + " -t " + FourNode() + " --trace " + trace + " --trace-ranks '" +
            bad + "'");
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_EQ(r.err.rfind("meshplan: error: --trace-ranks: ", 0), 0u) << bad << ": " << r.err;
  }
}

TEST_F(Cli, SimulateNoCoalesceReplaysEveryOpToTheSameResult) {
  // ATTENTION2D on the 32 GPUs of the 4-node file: after its all-gathers a rank computes its
  // blocks back to back, which the timing view merges, so it replays fewer events; --no-coalesce
  // replays every op. The simulated time must agree to the nanosecond per merged block
  // (tests/simulator/coalesce_test.cc), so to 1e-6 relative here.
  const std::string plan = (dir_ / "plan.toml").string();
  ASSERT_EQ(
      Run("plan -t " + FourNode() + " --seq 256K --schemes attention2d -q --out " + plan).exit_code,
      0);
  const RunResult view = Run("simulate " + plan + " -t " + FourNode() + " --format json -q");
  const RunResult every =
      Run("simulate " + plan + " -t " + FourNode() + " --format json -q --no-coalesce");
  ASSERT_EQ(view.exit_code, 0) << view.err;
  ASSERT_EQ(every.exit_code, 0) << every.err;
  auto number = [](const std::string& json, const std::string& key) {
    const size_t at = json.find("\"" + key + "\":");
    return at == std::string::npos ? -1.0 : std::stod(json.substr(at + key.size() + 3));
  };
  const double a = number(view.out, "simulated_s"), b = number(every.out, "simulated_s");
  ASSERT_GT(a, 0) << view.out.substr(0, 200);
  EXPECT_NEAR(a, b, 1e-6 * b);
  EXPECT_LT(number(view.out, "events"), number(every.out, "events"));
}

TEST_F(Cli, SimulateTraceIntoAMissingDirectoryIsRefused) {
  const std::string plan = (dir_ / "plan.toml").string();
  ASSERT_EQ(Run("plan -t " + FourNode() + " --seq 256K --schemes ring -q --out " + plan).exit_code,
            0);
  const std::string trace = (dir_ / "no/such/dir/trace.json").string();
  const RunResult r = Run("simulate " + plan + " --trace " + trace);
  // Issue 33's exit-code contract: an output path that cannot be written is a refusal of input,
  // exit 2, found before the replay (it was an I/O failure, exit 1, after it).
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("no/such/dir/trace.json"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_FALSE(fs::exists(dir_ / "no"));
}

TEST_F(Cli, SimulateRejectsBadPlansAndFlags) {
  const std::string plan = (dir_ / "plan.toml").string();
  ASSERT_EQ(Run("plan --seq 256K -q --out " + plan).exit_code, 0);  // the built-in 256-GPU cluster
  // A 256-GPU plan on the 32-GPU cluster.
  ExpectInvalid("simulate " + plan + " --topology " + FourNode(),
                {"plan.toml", "256", "32", "dgx-h100-4node.toml"});
  ExpectInvalid("simulate " + (dir_ / "missing.toml").string(), {"missing.toml"});
  ExpectInvalid("simulate " + plan + " --format xml", {"--format", "xml"});
  ExpectInvalid("simulate " + plan + " --ranks=-1", {"--ranks"});
  // Issue 32: --slowest is the name (--ranks means ranks sharing a machine in calibrate).
  ExpectInvalid("simulate " + plan + " --slowest=-1", {"--slowest"});
  ExpectInvalid("simulate", {"plan"});

  const std::string text = Read(plan);
  const std::string syntax = Write("syntax.toml", "schema_version = 1\n[workload\n");
  ExpectInvalid("simulate " + syntax, {"syntax.toml"});
  const std::string unknown = Write("unknown.toml", "colour = \"blue\"\n" + text);
  ExpectInvalid("simulate " + unknown, {"unknown.toml", "colour"});
  // A plan whose topology file is gone needs --topology.
  const std::string source = "source = \"built-in\"";
  const size_t at = text.find(source);
  ASSERT_NE(at, std::string::npos) << text;
  std::string moved = text;
  moved.replace(at, source.size(), "source = \"" + (dir_ / "gone.toml").string() + "\"");
  ExpectInvalid("simulate " + Write("moved.toml", moved),
                {"moved.toml", "gone.toml", "--topology"});
}

TEST_F(Cli, PlanSimulateReranksTheTopPlans) {
  RunResult r = Run("plan --simulate 3 --seq 256K --quiet --top 5");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  const std::string header = r.out.substr(r.out.find("#  "));  // the table header
  EXPECT_NE(header.substr(0, header.find('\n')).find("simulated"), std::string::npos) << r.out;
  r = Run("plan --simulate 2 --seq 256K --top 3 --schemes ring,usp");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("simulating plan 1/2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("simulating plan 2/2"), std::string::npos) << r.err;
  r = Run("plan --simulate 2 --seq 256K --top 3 --schemes ring,usp -q --format csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("rank,scheme,parameters,time_s,simulated_s,", 0), 0u) << r.out;
  ExpectInvalid("plan --simulate=-1", {"--simulate"});
}

TEST(JsonReader, ParsesWhatTheTestsRead) {
  Json j;
  ASSERT_TRUE(
      Json::Parse(" {\"a\":[1,2.5e-3,-4],\"b\":{\"c\":\"x\\\"y\",\"d\":null,\"e\":true}} ", &j));
  ASSERT_EQ(j.kind, Json::kObject);
  ASSERT_NE(j.Find("a"), nullptr);
  EXPECT_EQ(j.Find("a")->items.size(), 3u);
  EXPECT_DOUBLE_EQ(j.Find("a")->items[1].number, 2.5e-3);
  EXPECT_EQ(j.Find("b")->Find("c")->string, "x\"y");
  EXPECT_EQ(j.Find("b")->Find("d")->kind, Json::kNull);
  EXPECT_TRUE(j.Find("b")->Find("e")->boolean);
  for (const char* bad : {"", "{", "{\"a\":}", "[1,]", "{\"a\":1} x", "[1 2]", "nul"}) {
    Json k;
    EXPECT_FALSE(Json::Parse(bad, &k)) << bad;
  }
}

// ---- meshplan execute
// ----------------------------------------------------------------------------

// 4 GPUs on one switch: small enough that every plan runs in milliseconds on the CPU.
constexpr char kFourGpus[] = R"toml(name = "four-gpus"
description = "4 GPUs on one switch (test)"
[gpu]
model = "H100 SXM5 80GB"
memory_GB = 80
hbm_GBps = 3350
launch_overhead_us = 4
peak_tflops = { bf16 = 989, fp16 = 989, fp8 = 1979, fp32 = 494 }
attention_efficiency = [[512, 0.30], [16384, 0.62]]
[[level]]
name = "nvlink"
kind = "switch"
group_size = 4
bandwidth_GBps = 450
latency_us = 0.94
)toml";

class Execute : public Cli {
 protected:
  // Makes a 4-rank plan (S=256, Hq=4, Hkv=2, d=16) with `extra` plan flags; returns its path.
  std::string MakePlan(const std::string& extra = "--schemes mesh") {
    const std::string topology = Write("four.toml", kFourGpus);
    const std::string plan = (dir_ / "p.toml").string();
    const RunResult r =
        Run("plan -t " + topology + " --seq 256 --heads 4 --kv-heads 2 --head-dim 16 -q " + extra +
            " --out " + plan);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return plan;
  }
  static Workload SmallWorkload() {
    Workload w;
    w.seq_len = 256;
    w.q_heads = 4;
    w.kv_heads = 2;
    w.head_dim = 16;
    return w;
  }
  // Writes q.npy, k.npy, v.npy, d_o.npy of RandomInputs(seed), as float32, into `dir`; each
  // value is multiplied by `scale` for the named tensors.
  void WriteInputs(const fs::path& dir, uint64_t seed, double scale = 1.0,
                   const std::string& scaled = "") {
    fs::create_directories(dir);
    const Workload w = SmallWorkload();
    const exec::AttentionTensors<double> in = exec::RandomInputs(w, seed);
    auto write = [&](const char* name, const exec::TensorD& t) {
      std::vector<float> values(t.data.size());
      const double factor = scaled.find(name) != std::string::npos ? scale : 1.0;
      for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(t.data[i] * factor);
      const Status st = exec::WriteNpyFloat32((dir / (std::string(name) + ".npy")).string(),
                                              {t.batch, t.tokens, t.heads, t.dim}, values);
      ASSERT_TRUE(st.ok()) << st.message();
    };
    write("q", in.q);
    write("k", in.k);
    write("v", in.v);
    write("d_o", in.d_o);
  }
  static exec::NpyArray MustRead(const fs::path& path) {
    auto a = exec::ReadNpy(path.string());
    EXPECT_TRUE(a.ok()) << a.status().message();
    return a.ok() ? *a : exec::NpyArray{};
  }
};

// On a topology whose ranks share one device (what calibrate writes for this machine) the times
// are meant to be compared: no "not the cluster's" note, and a single run says it is a cold one.
TEST_F(Execute, OnAMachineLikeThisOneASingleRunSaysItIsCold) {
  const std::string plan = MakePlan();
  std::string shared = kFourGpus;
  const std::string at = "attention_efficiency = [[512, 0.30], [16384, 0.62]]";
  shared.replace(shared.find(at), at.size(), at + "\nranks_per_device = 4\nconcurrent_kernels = 2");
  const std::string machine = Write("machine.toml", shared);
  RunResult r = Run("execute " + plan + " -t " + machine + " -q");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("one run: its first-run costs"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("not the cluster's"), std::string::npos) << r.out;
  r = Run("execute " + plan + " -t " + machine + " -q --repeat 2");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(r.out.find("one run: its first-run costs"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("not the cluster's"), std::string::npos) << r.out;
}

TEST_F(Execute, ChecksAgainstTheReferenceAndReportsTheTimeline) {
  const std::string plan = MakePlan();
  // --errors: the percentage errors against the plan's GPU cluster, which issue 32 leaves out by
  // default for CPU ranks (checked below); the same needles as before.
  RunResult r = Run("execute " + plan + " --backend cpu --check --errors");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;
  for (const char* needle :
       {"mesh", "transport threads, 4 ranks", "random, seed 1", "exposed comm", "idle",
        "predicted vs measured", "the CPU executor's speed is not the cluster's",
        "tolerance 1.00e-04", "check passed", "error vs predicted",
        "per rank, predicted vs measured", "per op class, predicted vs measured",
        "\n  compute fwd ", "\n  compute bwd "}) {
    EXPECT_NE(r.out.find(needle), std::string::npos) << needle << "\n" << r.out;
  }
  // Without --errors: the same tables side by side, no percentage anywhere in them, one line
  // saying why.
  r = Run("execute " + plan + " --backend cpu --check");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(r.out.find("error vs predicted"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the CPU executor's speed is not the cluster's, so no errors are shown"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("per rank, predicted and measured:"), std::string::npos) << r.out;
  {
    // Between the comparison's heading and the check, the only percentages are the two share rows'.
    const size_t from = r.out.find("predicted vs measured (simulated on");
    const size_t to = r.out.find("\ncheck");
    ASSERT_TRUE(from != std::string::npos && to != std::string::npos) << r.out;
    const std::string tables = r.out.substr(from, to - from);
    EXPECT_EQ(std::count(tables.begin(), tables.end(), '%'), 4) << tables;
  }
  // One line per tensor, each error printed and below the tolerance.
  for (const char* tensor : {"\n  O ", "\n  LSE ", "\n  dQ ", "\n  dK ", "\n  dV "}) {
    const size_t at = r.out.find(tensor);
    ASSERT_NE(at, std::string::npos) << tensor << "\n" << r.out;
    const std::string line = r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
    EXPECT_NE(line.find("ok"), std::string::npos) << line;
    EXPECT_LT(std::stod(line.substr(line.find_first_of("0123456789"))), 1e-4) << line;
  }

  r = Run("execute " + plan + " --check --seed 5 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.front(), '{');
  for (const char* needle :
       {"\"seed\":5", "\"passed\":true", "\"tolerance\":1e-04", "\"measured\":{\"time_s\":",
        "\"predicted\":{\"time_s\":", "\"exposed_comm_fraction\":", "\"dV\":"}) {
    EXPECT_NE(r.out.find(needle), std::string::npos) << needle << "\n" << r.out;
  }
}

TEST_F(Execute, RepeatTimesNRunsAfterAWarmUpAndReportsTheirMedian) {
  const std::string plan = MakePlan();
  RunResult r = Run("execute " + plan + " --repeat 3 --check --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  // 4 runs: the warm-up, then 3 timed, each with one progress line.
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 4) << r.err;
  EXPECT_EQ(r.err.find("warm-up run: "), 0u) << r.err;
  for (const char* line : {"\nrun 1/3: ", "\nrun 2/3: ", "\nrun 3/3: "}) {
    EXPECT_NE(r.err.find(line), std::string::npos) << line << "\n" << r.err;
  }
  Json j;
  ASSERT_TRUE(Json::Parse(r.out, &j)) << r.out;
  const Json* repeat = j.Find("repeat");
  ASSERT_NE(repeat, nullptr) << r.out;
  for (const char* key : {"n", "warm_up", "median_s", "min_s", "max_s", "spread", "times_s",
                          "median_run", "median_error_pct"}) {
    ASSERT_NE(repeat->Find(key), nullptr) << key << "\n" << r.out;
  }
  EXPECT_EQ(repeat->Find("n")->number, 3);
  EXPECT_EQ(repeat->Find("warm_up")->number, 1);
  const std::vector<Json>& times = repeat->Find("times_s")->items;
  ASSERT_EQ(times.size(), 3u);  // the timed runs, the warm-up not among them
  std::vector<double> sorted;
  for (const Json& t : times) sorted.push_back(t.number);
  std::sort(sorted.begin(), sorted.end());
  const double median = repeat->Find("median_s")->number;
  EXPECT_DOUBLE_EQ(median, sorted[1]);
  EXPECT_DOUBLE_EQ(repeat->Find("min_s")->number, sorted[0]);
  EXPECT_DOUBLE_EQ(repeat->Find("max_s")->number, sorted[2]);
  EXPECT_NEAR(repeat->Find("spread")->number, (sorted[2] - sorted[0]) / median, 1e-9);
  const int median_run = static_cast<int>(repeat->Find("median_run")->number);
  ASSERT_TRUE(median_run >= 1 && median_run <= 3) << median_run;
  EXPECT_DOUBLE_EQ(times[median_run - 1].number, median);
  // The existing fields describe the median run; the error is the median's against the prediction.
  ASSERT_NE(j.Find("measured"), nullptr);
  EXPECT_DOUBLE_EQ(j.Find("measured")->Find("time_s")->number, median);
  ASSERT_NE(j.Find("wall_s"), nullptr);
  const double predicted = j.Find("predicted")->Find("time_s")->number;
  EXPECT_NEAR(repeat->Find("median_error_pct")->number, (median - predicted) / predicted * 100,
              1e-6 * std::abs((median - predicted) / predicted * 100) + 1e-9);
  // The check is of the first timed run.
  ASSERT_NE(j.Find("check"), nullptr);
  EXPECT_EQ(j.Find("check")->Find("run")->number, 1);
  EXPECT_TRUE(j.Find("check")->Find("passed")->boolean);

  // --errors: the error columns, against the plan's GPU cluster (issue 32: not by default).
  r = Run("execute " + plan + " --repeat 2 --check --errors");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 3) << r.err;
  for (const char* needle :
       {"2 timed runs after 1 untimed warm-up run: median ", ", spread ",
        "times:     ", "median run (run ", "measured, the median run", "time (median of 2)",
        "error vs predicted", "check (outputs of timed run 1 of 2)", "check passed"}) {
    EXPECT_NE(r.out.find(needle), std::string::npos) << needle << "\n" << r.out;
  }

  // --quiet: the same runs, nothing on stderr.
  r = Run("execute " + plan + " --repeat 2 --quiet --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find("\"n\":2"), std::string::npos) << r.out;

  // One run (the default): no warm-up, no progress, the same keys.
  r = Run("execute " + plan + " --repeat 1 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  ASSERT_TRUE(Json::Parse(r.out, &j)) << r.out;
  EXPECT_EQ(j.Find("repeat")->Find("n")->number, 1);
  EXPECT_EQ(j.Find("repeat")->Find("warm_up")->number, 0);
  ASSERT_EQ(j.Find("repeat")->Find("times_s")->items.size(), 1u);
  EXPECT_DOUBLE_EQ(j.Find("repeat")->Find("times_s")->items[0].number,
                   j.Find("measured")->Find("time_s")->number);
}

// The JSON's per-rank and per-op-class objects agree with each other and with the errors: the
// relations below hold by definition (docs/executor.md), whatever the machine's speed.
TEST_F(Execute, JsonComparesEveryRankAndOpClassWithThePrediction) {
  const std::string plan = MakePlan();
  const RunResult r = Run("execute " + plan + " --repeat 3 --format json -q");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  Json j;
  ASSERT_TRUE(Json::Parse(r.out, &j)) << r.out;
  const Json* measured = j.Find("measured");
  const Json* predicted = j.Find("predicted");
  const Json* error = j.Find("error_pct");
  ASSERT_TRUE(measured && predicted && error) << r.out;
  auto error_of = [](double m, double p) { return (m - p) / p * 100; };
  auto near = [](double a, double b) {
    return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)) + 1e-12;
  };
  // The total: the median against the predicted time, as repeat.median_error_pct.
  EXPECT_TRUE(near(error->Find("time")->number, j.Find("repeat")->Find("median_error_pct")->number))
      << r.out;
  // Per rank: all 4, each field's error against its prediction; busy = compute + exposed comm.
  const std::vector<Json>& m_ranks = measured->Find("ranks")->items;
  const std::vector<Json>& p_ranks = predicted->Find("ranks")->items;
  const std::vector<Json>& e_ranks = error->Find("ranks")->items;
  ASSERT_EQ(m_ranks.size(), 4u);
  ASSERT_EQ(p_ranks.size(), 4u);
  ASSERT_EQ(e_ranks.size(), 4u);
  double ranks_compute_s = 0;
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(m_ranks[i].Find("rank")->number, static_cast<double>(i));
    const double m_busy = m_ranks[i].Find("busy_s")->number,
                 p_busy = p_ranks[i].Find("busy_s")->number;
    EXPECT_TRUE(near(
        m_busy, m_ranks[i].Find("compute_s")->number + m_ranks[i].Find("exposed_comm_s")->number));
    ASSERT_GT(p_busy, 0);
    EXPECT_TRUE(near(e_ranks[i].Find("busy")->number, error_of(m_busy, p_busy))) << r.out;
    const double p_compute = p_ranks[i].Find("compute_s")->number;
    ASSERT_GT(p_compute, 0);
    EXPECT_TRUE(near(e_ranks[i].Find("compute")->number,
                     error_of(m_ranks[i].Find("compute_s")->number, p_compute)));
    ranks_compute_s += m_ranks[i].Find("compute_s")->number;
  }
  // Per op class: all 9, in order, the same op counts (one plan); a fwd+bwd mesh plan has forward
  // and backward computes and sends; the compute-stream classes add up to the ranks' compute
  // (the same op durations summed two ways).
  const std::vector<Json>& m_classes = measured->Find("op_classes")->items;
  const std::vector<Json>& p_classes = predicted->Find("op_classes")->items;
  const std::vector<Json>& e_classes = error->Find("op_classes")->items;
  ASSERT_EQ(m_classes.size(), 9u);
  ASSERT_EQ(p_classes.size(), 9u);
  ASSERT_EQ(e_classes.size(), 9u);
  const char* names[] = {"compute fwd", "compute bwd", "merge fwd",      "merge bwd", "send",
                         "recv",        "all-gather",  "reduce-scatter", "all-to-all"};
  double classes_compute_s = 0;
  for (size_t c = 0; c < 9; ++c) {
    EXPECT_EQ(m_classes[c].Find("class")->string, names[c]);
    EXPECT_EQ(e_classes[c].Find("class")->string, names[c]);
    EXPECT_EQ(m_classes[c].Find("ops")->number, p_classes[c].Find("ops")->number) << names[c];
    const double m_s = m_classes[c].Find("time_s")->number,
                 p_s = p_classes[c].Find("time_s")->number;
    if (p_s > 0) {
      EXPECT_TRUE(near(e_classes[c].Find("time")->number, error_of(m_s, p_s))) << names[c];
    } else {
      EXPECT_EQ(e_classes[c].Find("time")->kind, Json::kNull) << names[c];
    }
    if (c < 4) classes_compute_s += m_s;
  }
  EXPECT_GT(m_classes[0].Find("ops")->number, 0);  // compute fwd
  EXPECT_GT(m_classes[1].Find("ops")->number, 0);  // compute bwd
  EXPECT_GT(m_classes[4].Find("ops")->number, 0);  // send
  EXPECT_TRUE(near(classes_compute_s, ranks_compute_s))
      << classes_compute_s << " " << ranks_compute_s;
}

TEST_F(Execute, CsvRowsAppendAcrossRunsAndTheReportGoesWhereOSays) {
  const std::string plan = MakePlan();
  const std::string csv = (dir_ / "runs.csv").string();
  RunResult r = Run("execute " + plan + " --format csv -o " + csv + " --check");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find("meshplan: wrote the report to " + csv), std::string::npos) << r.err;
  r = Run("execute " + plan + " --format csv -o " + csv + " --append --repeat 2 -q");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;
  const std::string text = Read(csv);
  ASSERT_EQ(std::count(text.begin(), text.end(), '\n'), 3) << text;  // a header and two rows
  EXPECT_EQ(text.rfind("plan,scheme,parameters,batch,seq_len,", 0), 0u) << text;
  // The first run was checked, the second not; the second made 2 timed runs.
  const size_t second = text.find('\n') + 1;
  const size_t third = text.find('\n', second) + 1;
  const std::string row1 = text.substr(second, third - second);
  const std::string row2 = text.substr(third);
  EXPECT_NE(row1.find(",passed,"), std::string::npos) << row1;
  EXPECT_EQ(row2.find(",passed,"), std::string::npos) << row2;
  EXPECT_NE(row2.find(",cpu,threads,4,"), std::string::npos) << row2;
  // The table into a file: stdout stays empty, the file has the whole report.
  const std::string table = (dir_ / "report.txt").string();
  r = Run("execute " + plan + " -o " + table + " -q");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(Read(table).find("predicted vs measured"), std::string::npos);
  // A report path that cannot be written is refused before the run.
  r = Run("execute " + plan + " -o " + (dir_ / "missing" / "r.txt").string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("-o"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("measured"), std::string::npos) << r.out;
}

TEST_F(Execute, RepeatMustBeACountOfRunsUpToAThousand) {
  const std::string plan = MakePlan();
  ExpectInvalid("execute " + plan + " --repeat 0", {"--repeat", "0", "1 to 1000"});
  ExpectInvalid("execute " + plan + " --repeat -1", {"--repeat", "-1"});
  ExpectInvalid("execute " + plan + " --repeat=-1", {"--repeat", "-1"});
  ExpectInvalid("execute " + plan + " --repeat x", {"--repeat", "'x'"});
  ExpectInvalid("execute " + plan + " --repeat 2.5", {"--repeat", "2.5"});
  ExpectInvalid("execute " + plan + " --repeat 1001", {"--repeat", "1001", "1 to 1000"});
  ExpectInvalid("execute " + plan + " --repeat 99999999999999999999", {"--repeat"});
}

TEST_F(Execute, WritesOutputsAndReadsInputs) {
  const std::string plan = MakePlan();
  const fs::path out = dir_ / "new" / "out";  // created, parents included
  RunResult r = Run("execute " + plan + " --seed 7 --outputs " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("o.npy, lse.npy, dq.npy, dk.npy, dv.npy"), std::string::npos) << r.out;
  EXPECT_EQ(MustRead(out / "o.npy").shape, (std::vector<int64_t>{1, 256, 4, 16}));
  EXPECT_EQ(MustRead(out / "lse.npy").shape, (std::vector<int64_t>{1, 256, 4}));
  EXPECT_EQ(MustRead(out / "dq.npy").shape, (std::vector<int64_t>{1, 256, 4, 16}));
  EXPECT_EQ(MustRead(out / "dk.npy").shape, (std::vector<int64_t>{1, 256, 2, 16}));
  EXPECT_EQ(MustRead(out / "dv.npy").shape, (std::vector<int64_t>{1, 256, 2, 16}));

  // The same inputs from files give the same outputs (up to the order of merges); others differ.
  WriteInputs(dir_ / "in", 7);
  const fs::path again = dir_ / "again";
  r = Run("execute " + plan + " --check --inputs " + (dir_ / "in").string() + " --outputs " +
          again.string());
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("check passed"), std::string::npos);
  EXPECT_NE(r.out.find("inputs:    from " + (dir_ / "in").string()), std::string::npos) << r.out;
  for (const char* name : {"o.npy", "dq.npy", "dv.npy"}) {
    const exec::NpyArray a = MustRead(out / name), b = MustRead(again / name);
    ASSERT_EQ(a.values.size(), b.values.size());
    double worst = 0, scale = 0;
    for (size_t i = 0; i < a.values.size(); ++i) {
      worst = std::max(worst, std::abs(a.values[i] - b.values[i]));
      scale = std::max(scale, std::abs(a.values[i]));
    }
    EXPECT_GT(scale, 0) << name;
    EXPECT_LE(worst, 1e-5 * scale) << name;
  }
  WriteInputs(dir_ / "other", 8);
  r = Run("execute " + plan + " --inputs " + (dir_ / "other").string() + " --outputs " +
          (dir_ / "o8").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(MustRead(out / "o.npy").values, MustRead(dir_ / "o8" / "o.npy").values);
}

TEST_F(Execute, RejectsBadInputsAndFlags) {
  const std::string plan = MakePlan();
  const fs::path in = dir_ / "in";
  WriteInputs(in, 3);
  // k.npy shaped like q.
  ASSERT_TRUE(exec::WriteNpyFloat32((in / "k.npy").string(), {1, 256, 4, 16},
                                    std::vector<float>(256 * 64, 1.0f))
                  .ok());
  ExpectInvalid("execute " + plan + " --inputs " + in.string(),
                {"k.npy", "(1, 256, 2, 16)", "(1, 256, 4, 16)"});
  WriteInputs(in, 3);
  fs::remove(in / "d_o.npy");  // the plan has a backward
  ExpectInvalid(
      "execute " + plan + " --inputs " + in.string() + " --outputs " + (dir_ / "out").string(),
      {"d_o.npy"});
  EXPECT_FALSE(fs::exists(dir_ / "out"));
  ExpectInvalid("execute " + plan + " --inputs " + (dir_ / "nowhere").string(), {"q.npy"});
  ExpectInvalid("execute " + plan + " --dtype bf16", {"--dtype", "--backend cuda only"});
  ExpectInvalid("execute " + plan + " --backend tpu", {"--backend", "tpu", "cpu, cuda"});
  ExpectInvalid("execute " + plan + " --transport carrier-pigeon",
                {"--transport", "carrier-pigeon"});
  // (csv is one of execute's formats since issue 32; an unknown one is refused as csv was.)
  ExpectInvalid("execute " + plan + " --format xml", {"--format", "xml"});
  ExpectInvalid("execute " + plan + " --timeout-s 0", {"--timeout-s"});
  ExpectInvalid("execute " + (dir_ / "missing.toml").string(), {"missing.toml"});
  ExpectInvalid("execute", {"plan"});
}

// --backend cuda as the binary was built: refused when CUDA was not built; with CUDA but no usable
// GPU (CI), refused with the reason; with a GPU, the run checks within the bf16 tolerance.
TEST_F(Execute, CudaBackendRunsOrSaysWhyNot) {
  const std::string plan = MakePlan();
  const bool built = Run("--version").out.find("cuda") != std::string::npos;
  if (!built) {
    ExpectInvalid("execute " + plan + " --backend cuda", {"--backend", "cuda", "not built"});
    return;
  }
  ExpectInvalid("execute " + plan + " --backend cuda --transport threads",
                {"--transport", "threads", "local, nccl, mpi"});
  ExpectInvalid("execute " + plan + " --backend cuda --dtype fp8", {"--dtype", "fp8"});
  ExpectInvalid("execute " + plan + " --backend cuda --kernels fast", {"--kernels", "fast"});
  ExpectInvalid("execute " + plan + " --backend cuda --inject-silent 1",
                {"--inject-silent", "cuda"});
  const fs::path out = dir_ / "cuda-out";
  const RunResult r = Run("execute " + plan + " --backend cuda --check --outputs " + out.string());
  if (r.exit_code == 0) {
    EXPECT_NE(r.out.find("check passed"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("bf16 inputs"), std::string::npos) << r.out;
    EXPECT_TRUE(fs::exists(out / "o.npy"));
    return;
  }
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--backend cuda"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("CUDA device"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(Execute, AFailedCheckLeavesNoOutputFiles) {
  const std::string plan = MakePlan();
  // Scores of 1e40 overflow float (the executor) but not double (the reference): O and LSE come
  // out wrong, so the check must fail, with exit 1 and nothing written.
  const fs::path in = dir_ / "huge";
  WriteInputs(in, 4, 1e20, "q k");
  const fs::path out = dir_ / "out";
  const RunResult r =
      Run("execute " + plan + " --check --inputs " + in.string() + " --outputs " + out.string());
  EXPECT_EQ(r.exit_code, 1) << r.err << r.out;
  EXPECT_NE(r.out.find("check FAILED"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("meshplan: error: check failed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no outputs written"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(Execute, AFailingRankOrASilentPeerFailsTheRunWithoutOutputs) {
  const std::string plan = MakePlan();
  const fs::path out = dir_ / "out";
  RunResult r = Run("execute " + plan + " --check --inject-fail 2:3 --outputs " + out.string());
  EXPECT_EQ(r.exit_code, 1) << r.err << r.out;
  EXPECT_NE(r.err.find("meshplan: error: run failed: rank 2 op 3"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("injected failure"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_FALSE(fs::exists(out));

  const auto start = std::chrono::steady_clock::now();
  r = Run("execute " + plan + " --inject-silent 1 --timeout-s 1 --outputs " + out.string());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exit_code, 1) << r.err << r.out;
  EXPECT_NE(r.err.find("no message within the deadline"), std::string::npos) << r.err;
  EXPECT_LT(seconds, 10.0);
  EXPECT_FALSE(fs::exists(out));

  ExpectInvalid("execute " + plan + " --inject-fail 4:0", {"--inject-fail", "4:0"});
  ExpectInvalid("execute " + plan + " --inject-silent 7", {"--inject-silent", "7"});
}

TEST_F(Execute, ABackwardOnlyPlanRunsWithItsForward) {
  const std::string plan = MakePlan("--schemes ring --pass bwd");
  const fs::path out = dir_ / "out";
  const RunResult r = Run("execute " + plan + " --check --outputs " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.err.find("running fwd+bwd"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.out.find("check passed"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(out / "o.npy"));
  EXPECT_TRUE(fs::exists(out / "dk.npy"));
}

// Every plan the planner makes passes the engine's happens-before checker, on both passes.
TEST_F(Execute, PlansPassTheDependencyCheck) {
  for (const std::string schemes : {"ring", "mesh", "usp"}) {
    const std::string plan = MakePlan("--schemes " + schemes);
    const RunResult r = Run("execute " + plan + " --check --check-dependencies");
    EXPECT_EQ(r.exit_code, 0) << schemes << ": " << r.err << r.out;
    EXPECT_NE(r.out.find("check passed"), std::string::npos) << schemes << ": " << r.out;
  }
}

// ---- capacity planning: sweep and fit ----

TEST_F(Cli, SweepWritesOneCsvRowPerPointAndSchemeWithProgress) {
  RunResult r = Run("sweep --gpus 8,16 --seq 64K..128K --schemes ring,mesh");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("topology,gpus,seq_len,scheme,valid,parameters,time_s", 0), 0u) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1 + 2 * 2 * 2) << r.out;
  EXPECT_NE(r.out.find("\ndgx-h100-32node,16,131072,mesh,true,"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("sweep: point 1/4"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("sweep: point 4/4"), std::string::npos) << r.err;
  r = Run("sweep --gpus 8,16 --seq 64K..128K --schemes ring,mesh --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST_F(Cli, SweepJsonToAFileAndSeveralTopologies) {
  const std::string topo = std::string(MESHPLAN_SOURCE_DIR) + "/topologies/";
  const std::string out = (dir_ / "rows.json").string();
  const RunResult r =
      Run("sweep -t " + topo + "dgx-h100-4node.toml," + topo + "dgx-a100-16node.toml -t " + topo +
          "dgx-h100-1node.toml --seq 32K --schemes ring,ulysses --format json -q --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.empty());
  const std::string json = Read(out);
  EXPECT_EQ(json.rfind("{\"rows\":[", 0), 0u) << json;
  for (const char* name : {"\"dgx-h100-4node\"", "\"dgx-a100-16node\"", "\"dgx-h100-1node\""}) {
    EXPECT_NE(json.find(name), std::string::npos) << name;
  }
  size_t rows = 0;
  for (size_t at = json.find("\"scheme\":"); at != std::string::npos;
       at = json.find("\"scheme\":", at + 1))
    ++rows;
  EXPECT_EQ(rows, 6u);
}

TEST_F(Cli, SweepFileWithFlagsOverridingIt) {
  fs::create_directories(dir_ / "sub");
  fs::copy_file(std::string(MESHPLAN_SOURCE_DIR) + "/topologies/dgx-h100-4node.toml",
                dir_ / "sub" / "four.toml");
  const std::string file =
      Write("sub/sweep.toml", R"(topologies = ["four.toml"]   # relative to this file
gpus = "8..32"
seq = [65536, "128K"]
schemes = ["ring", "mesh", "usp"]
heads = 32
kv_heads = "8"
pass = "fwd"
)");
  RunResult r = Run("sweep -q --sweep-file " + file);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1 + 3 * 2 * 3) << r.out;
  EXPECT_NE(r.out.find("\ndgx-h100-4node,32,131072,usp,"), std::string::npos) << r.out;
  // Flags win over the file.
  r = Run("sweep -q --sweep-file " + file + " --schemes ring --gpus 16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1 + 1 * 2 * 1) << r.out;
  EXPECT_NE(r.out.find("\ndgx-h100-4node,16,65536,ring,"), std::string::npos) << r.out;

  const std::string unknown = Write("unknown.toml", "gpus = \"8..32\"\ncolour = \"blue\"\n");
  ExpectInvalid("sweep --sweep-file " + unknown, {"unknown.toml", "unknown key 'colour'"});
  const std::string bad_range = Write("bad_range.toml", "gpus = \"32..8\"\n");
  ExpectInvalid("sweep --sweep-file " + bad_range, {"bad_range.toml", "gpus", "reversed"});
  const std::string bad_scheme = Write("bad_scheme.toml", "schemes = [\"ring\", \"spiral\"]\n");
  ExpectInvalid("sweep --sweep-file " + bad_scheme,
                {"bad_scheme.toml", "schemes", "unknown scheme 'spiral'"});
  const std::string bad_type = Write("bad_type.toml", "heads = 1.5\n");
  ExpectInvalid("sweep --sweep-file " + bad_type, {"bad_type.toml", "heads", "expected a count"});
  ExpectInvalid("sweep --sweep-file " + (dir_ / "missing.toml").string(),
                {"missing.toml", "cannot open"});
}

TEST_F(Cli, SweepBadListsAndSchemes) {
  ExpectInvalid("sweep --gpus 8..4", {"--gpus", "'8..4'", "reversed"});
  ExpectInvalid("sweep --gpus 0..8", {"--gpus", "'0'", "must be positive"});
  ExpectInvalid("sweep --gpus 8..", {"--gpus", "'8..'", "needs both ends"});
  ExpectInvalid("sweep --gpus ..8", {"--gpus", "needs both ends"});
  ExpectInvalid("sweep --gpus abc", {"--gpus", "'abc' is not a valid count"});
  ExpectInvalid("sweep --gpus 8..64:+0", {"--gpus", "'8..64:+0'", "step", "must be positive"});
  ExpectInvalid("sweep --gpus 8..64:x", {"--gpus", "step must be"});
  ExpectInvalid("sweep --gpus 8..64:*1", {"--gpus", "factor must be at least 2"});
  ExpectInvalid("sweep --gpus 8,,16", {"--gpus", "empty item"});
  ExpectInvalid("sweep --gpus 0", {"--gpus", "must be positive"});
  ExpectInvalid("sweep --gpus 1..1G:+1", {"--gpus", "more than 100000 values"});
  ExpectInvalid("sweep --seq 1M..128K", {"--seq", "reversed"});
  ExpectInvalid("sweep --gpus 12", {"cannot scale to 12 GPUs", "multiple of the 8 GPUs"});
  ExpectInvalid("sweep --schemes ring,spiral", {"--schemes", "unknown scheme 'spiral'"});
  ExpectInvalid("sweep --format xml", {"--format", "xml"});
  ExpectInvalid("sweep --heads 60", {"heads (60) must be a multiple of kv-heads (8)"});
}

TEST_F(Cli, SweepListSyntaxExpandsRanges) {
  const RunResult r =
      Run("sweep -q --gpus 8..64:+8,128..512,2048..4096:*2 --seq 64K --schemes ring");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> gpus;
  std::stringstream in(r.out);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    const size_t first = line.find(',') + 1;  // the second field is the GPU count
    gpus.push_back(line.substr(first, line.find(',', first) - first));
  }
  const std::vector<std::string> expected = {"8",  "16",  "24",  "32",  "40",   "48",  "56",
                                             "64", "128", "256", "512", "2048", "4096"};
  EXPECT_EQ(gpus, expected) << r.out;
}

TEST_F(Cli, FitPrintsTheLongestSequencePerScheme) {
  RunResult r = Run("fit -t " + std::string(MESHPLAN_SOURCE_DIR) +
                    "/topologies/dgx-h100-4node.toml --schemes ring,ulysses,mesh --reserve-gib 40");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("multiples of 64 tokens = 2 x 32 GPUs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reserved: 40.00 GiB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n  ring "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n  mesh "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ulysses: head-parallel degree 32 exceeds the 8 KV heads"),
            std::string::npos)
      << r.out;

  r = Run("fit --schemes ring --format json --max-seq 1M");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"scheme\":\"ring\",\"found\":true,\"seq_len\":1048576,\"at_limit\":true"),
            std::string::npos)
      << r.out;
}

TEST_F(Cli, FitWithABudgetFindsTheSmallestCluster) {
  RunResult r = Run("fit --seq 2M --budget-s 10");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("smallest cluster: "), std::string::npos) << r.out;
  // One layer's time, and said so (issue 31: "step" is never one layer).
  EXPECT_NE(r.out.find("budget:   10.000 s for one attention layer (fwd+bwd)"), std::string::npos)
      << r.out;
  r = Run("fit --seq 2M --budget-s 10 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"budget_s\":10"), std::string::npos) << r.out;
  // Issue 32: -o writes the report to a file (stdout stays empty), -q keeps stderr quiet.
  const std::string report = (dir_ / "fit.txt").string();
  r = Run("fit --seq 2M --budget-s 10 -q -o " + report);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;
  EXPECT_NE(Read(report).find("smallest cluster: "), std::string::npos);

  ExpectInvalid("fit --seq 1M --budget-s 0.001 --max-gpus 64 --schemes ring",
                {"no cluster of up to 64 GPUs", "fastest fitting plan takes"});
  ExpectInvalid("fit --budget-s 0", {"--budget-s", "must be positive"});
  ExpectInvalid("fit --max-gpus 64", {"--max-gpus", "--budget-s"});
  ExpectInvalid("fit --budget-s 5", {"--budget-s", "needs --seq"});
  ExpectInvalid("fit --seq 1M", {"--seq", "only applies with --budget-s"});
  ExpectInvalid("fit --seq 1M --budget-s 5 --max-seq 2M", {"--max-seq", "does not apply"});
  ExpectInvalid("fit --max-seq 0", {"--max-seq", "must be positive"});
  ExpectInvalid("fit --schemes spiral", {"--schemes", "unknown scheme 'spiral'"});
  ExpectInvalid("fit --format csv", {"--format", "csv"});
}

// ---- meshplan simulate --timeline
// ----------------------------------------------------------------

TEST_F(Cli, SimulateWritesAnSvgTimeline) {
  const std::string plan = (dir_ / "plan.toml").string();
  ASSERT_EQ(Run("plan -t " + FourNode() + " --seq 256K --schemes ring -q --out " + plan).exit_code,
            0);
  const std::string svg = (dir_ / "t.svg").string();
  RunResult r = Run("simulate " + plan + " --timeline " + svg);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(fs::exists(svg));
  const std::string text = Read(svg);
  EXPECT_TRUE(text.rfind("<svg", 0) == 0 || text.rfind("<?xml", 0) == 0) << text.substr(0, 80);
  EXPECT_NE(text.find("<svg xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  EXPECT_NE(text.find(">rank 0</text>"), std::string::npos);
  EXPECT_NE(text.find("class=\"bar\""), std::string::npos);
  EXPECT_NE(text.find("time (ms)"), std::string::npos);
  EXPECT_NE(text.find("</svg>"), std::string::npos);
  EXPECT_NE(r.err.find("wrote timeline"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("simulated"), std::string::npos) << r.out;  // the report still prints

  // An unwritable path is refused (exit 2 since issue 33's contract; it was exit 1 after the
  // replay), with nothing on stdout and nothing created.
  const std::string bad = (dir_ / "no/such/dir/t.svg").string();
  r = Run("simulate " + plan + " --timeline " + bad);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("no/such/dir/t.svg"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_FALSE(fs::exists(dir_ / "no"));
}

}  // namespace
}  // namespace meshplan
