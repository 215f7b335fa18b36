// `-t NAME` and `meshplan topo list` through the binary: a shipped cluster by name, a path as
// before, an unknown name (one error line listing every shipped name), and a list holding every
// shipped file. Expected names come from listing topologies/ here, not from the program.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace meshplan {
namespace {

namespace fs = std::filesystem;

const fs::path kShipped = fs::path(MESHPLAN_SOURCE_DIR) / "topologies";

std::vector<std::string> ShippedNames() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(kShipped)) {
    if (e.path().extension() == ".toml") out.push_back(e.path().stem().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

struct RunResult {
  int exit_code = -1;
  std::string out, err;
};

class TopologyNames : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("meshplan_names_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  static std::string Read(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // Runs the binary in the test's own directory (so no topology file lies in the working
  // directory).
  RunResult Run(const std::string& args) {
    const std::string out = (dir_ / "stdout").string(), err = (dir_ / "stderr").string();
    const std::string cmd = "cd " + dir_.string() + " && " + std::string(MESHPLAN_BINARY) + " " +
                            args + " >" + out + " 2>" + err + " </dev/null";
    const int status = std::system(cmd.c_str());
    RunResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = Read(out);
    r.err = Read(err);
    return r;
  }
  fs::path dir_;
};

TEST_F(TopologyNames, AShippedClusterByName) {
  const RunResult r = Run("plan -t dgx-h100-4node --seq 64K --top 1");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // The cluster line names the file's cluster: 4 nodes x 8 GPUs = 32.
  EXPECT_NE(r.out.find("32 x H100 SXM5 80GB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dgx-h100-4node"), std::string::npos) << r.out;
  // The plan file records where the cluster came from, so simulate finds it again.
  const RunResult saved = Run("plan -t dgx-h100-1node --seq 16K --top 1 -q --out plan.toml");
  ASSERT_EQ(saved.exit_code, 0) << saved.err;
  EXPECT_NE(Read(dir_ / "plan.toml").find((kShipped / "dgx-h100-1node.toml").string()),
            std::string::npos);
  const RunResult sim = Run("simulate plan.toml");
  EXPECT_EQ(sim.exit_code, 0) << sim.err;
  // sweep takes names (one row: 8 GPUs of dgx-h100-1node, 64K tokens, ring).
  const RunResult sweep = Run("sweep -q -t dgx-h100-1node --seq 64K --schemes ring");
  EXPECT_EQ(sweep.exit_code, 0) << sweep.err;
  EXPECT_NE(sweep.out.find("\ndgx-h100-1node,8,65536,ring,true,"), std::string::npos) << sweep.out;
  // topo show and validate take names too.
  const RunResult show = Run("topo show hgx-h200-32gpu");
  EXPECT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("name:        hgx-h200-32gpu"), std::string::npos) << show.out;
  EXPECT_EQ(Run("topo validate dgx-a100-16node").exit_code, 0);
}

TEST_F(TopologyNames, APathWorksAsBefore) {
  const RunResult r =
      Run("plan -t " + (kShipped / "dgx-h100-4node.toml").string() + " --seq 64K --top 1");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("(dgx-h100-4node"), std::string::npos) << r.out;
  // A missing path is still reported as a file that cannot be opened.
  const RunResult missing = Run("plan -t nope.toml");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("nope.toml"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("cannot open"), std::string::npos) << missing.err;
}

TEST_F(TopologyNames, AnUnknownNameListsTheShippedOnes) {
  for (const char* command :
       {"plan -t dgx-h100-3node", "sweep -q -t dgx-h100-3node", "topo show dgx-h100-3node"}) {
    const RunResult r = Run(command);
    EXPECT_EQ(r.exit_code, 2) << command;
    EXPECT_EQ(r.err.rfind("meshplan: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find("unknown cluster 'dgx-h100-3node'"), std::string::npos) << r.err;
    for (const std::string& name : ShippedNames())
      EXPECT_NE(r.err.find(name), std::string::npos) << name << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
  // The flag is named where a flag was used.
  EXPECT_NE(Run("plan -t dgx-h100-3node").err.find("--topology: unknown cluster"),
            std::string::npos);
}

TEST_F(TopologyNames, TopoListShowsEveryShippedFile) {
  const RunResult r = Run("topo list");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(kShipped.string()), std::string::npos) << r.out;
  std::istringstream lines(r.out);
  std::string line;
  std::vector<std::string> rows;  // first word of each table row that names a shipped file
  const std::vector<std::string> names = ShippedNames();
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string first;
    words >> first;
    if (std::find(names.begin(), names.end(), first) != names.end()) rows.push_back(first);
  }
  EXPECT_EQ(rows, names);  // each file once, sorted
  // A row says GPUs, model and levels: dgx-h100-4node is 32 H100s on nvlink (8 per node) and ib (4
  // nodes).
  const size_t at = r.out.find("  dgx-h100-4node ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string row = r.out.substr(at, r.out.find('\n', at) - at);
  EXPECT_NE(row.find(" 32 "), std::string::npos) << row;
  EXPECT_NE(row.find("H100 SXM5 80GB"), std::string::npos) << row;
  EXPECT_NE(row.find("nvlink switch 8 x 450 GB/s, ib rail-fat-tree 4 x 50 GB/s"), std::string::npos)
      << row;
  // And its description from the file follows it.
  EXPECT_NE(r.out.find("4 x DGX H100 (32 x H100 SXM5), NVLink 4 in the node"), std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace meshplan
