// Output files as a set (executor/io/run_files.h): a signal while they are written leaves none of
// them, and a complete write leaves all of them, each a readable .npy.
#include "executor/io/run_files.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/base/temp_files.h"
#include "executor/device/engine_outputs.h"
#include "executor/io/npy.h"

namespace meshplan::exec {
namespace {

namespace fs = std::filesystem;

class OutputFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("meshplan_run_files_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A forward and backward of B=1, S=4, Hq=2, Hkv=1, d=2: five files.
  static Workload Small() {
    Workload w;
    w.batch = 1;
    w.seq_len = 4;
    w.q_heads = 2;
    w.kv_heads = 1;
    w.head_dim = 2;
    w.pass = Pass::kForwardBackward;
    return w;
  }
  static AttentionTensors<float> Outputs(const Workload& w) {
    AttentionTensors<float> out = OutputTensors(w);
    for (TensorF* t : {&out.o, &out.lse, &out.dq, &out.dk, &out.dv}) {
      for (size_t i = 0; i < t->data.size(); ++i) t->data[i] = static_cast<float>(i);
    }
    return out;
  }

  // Forks a child that installs the signal handlers and writes the outputs into dir_/out,
  // raising `signal_number` right after the file `raise_after` is in place. Returns the wait
  // status.
  int WriteInChild(int signal_number, const std::string& raise_after) {
    const pid_t child = ::fork();
    if (child == 0) {
      InstallTempFileCleanupOnSignals();
      const Workload w = Small();
      auto written =
          WriteOutputFiles((dir_ / "out").string(), w, Outputs(w), [&](const std::string& name) {
            if (name == raise_after) ::raise(signal_number);
          });
      ::_exit(written.ok() ? 0 : 3);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    return status;
  }

  std::vector<std::string> FilesIn(const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir))
      names.push_back(entry.path().filename().string());
    return names;
  }

  fs::path dir_;
};

TEST_F(OutputFilesTest, ACompleteWriteLeavesTheFiveFiles) {
  const Workload w = Small();
  std::vector<std::string> seen;
  auto written = WriteOutputFiles((dir_ / "out").string(), w, Outputs(w),
                                  [&](const std::string& name) { seen.push_back(name); });
  ASSERT_TRUE(written.ok()) << written.status().message();
  const std::vector<std::string> expected = {"o.npy", "lse.npy", "dq.npy", "dk.npy", "dv.npy"};
  EXPECT_EQ(*written, expected);
  EXPECT_EQ(seen, expected);
  // dk is [1, 4, 1, 2]: 8 values 0..7.
  auto dk = ReadNpyWithShape((dir_ / "out" / "dk.npy").string(), {1, 4, 1, 2});
  ASSERT_TRUE(dk.ok()) << dk.status().message();
  EXPECT_EQ(dk->values.size(), 8u);
  EXPECT_EQ(dk->values[7], 7.0);
  EXPECT_EQ(FilesIn(dir_ / "out").size(), 5u);  // no temporary file left beside them
}

TEST_F(OutputFilesTest, ASignalAfterSomeFilesLeavesNoneOfThem) {
  // Interrupted after o.npy and lse.npy are in place (the case of issue 33: new o/lse beside an
  // earlier run's dq/dk/dv): the process still dies of the signal, and the directory is empty.
  for (int signal_number : {SIGINT, SIGTERM}) {
    fs::remove_all(dir_ / "out");
    const int status = WriteInChild(signal_number, "lse.npy");
    ASSERT_TRUE(WIFSIGNALED(status)) << status;
    EXPECT_EQ(WTERMSIG(status), signal_number);
    ASSERT_TRUE(fs::is_directory(dir_ / "out"));
    EXPECT_TRUE(FilesIn(dir_ / "out").empty()) << FilesIn(dir_ / "out").front();
  }
}

TEST_F(OutputFilesTest, ASignalAfterTheLastFileStillRemovesTheSet) {
  // The set is complete only when WriteOutputFiles returns; a signal inside the last callback
  // comes before that.
  const int status = WriteInChild(SIGHUP, "dv.npy");
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_TRUE(FilesIn(dir_ / "out").empty());
}

TEST_F(OutputFilesTest, AfterTheWriteReturnsTheFilesAreNoLongerRegistered) {
  // A signal after a complete write must not take the outputs with it.
  const pid_t child = ::fork();
  if (child == 0) {
    InstallTempFileCleanupOnSignals();
    const Workload w = Small();
    auto written = WriteOutputFiles((dir_ / "out").string(), w, Outputs(w));
    if (!written.ok()) ::_exit(3);
    ::raise(SIGTERM);
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(FilesIn(dir_ / "out").size(), 5u);
}

}  // namespace
}  // namespace meshplan::exec
