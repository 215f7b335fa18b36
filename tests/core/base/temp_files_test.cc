#include "core/base/temp_files.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

namespace meshplan {
namespace {

namespace fs = std::filesystem;

class TempFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("meshplan_temp_files_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Forks a child that installs the handlers, creates `path`, registers it unless `registered`
  // is false (or registers and then drops the registration when `drop` is true), and signals
  // itself with `signal_number`. Returns the child's wait status.
  static int RunChild(const std::string& path, int signal_number, bool drop) {
    const pid_t child = ::fork();
    if (child == 0) {
      InstallTempFileCleanupOnSignals();
      std::ofstream(path) << "partial";
      std::optional<TempFileRegistration> registration;
      registration.emplace(path);
      if (drop) registration.reset();
      ::raise(signal_number);
      ::_exit(0);  // not reached: the handler re-raises with the default action
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    return status;
  }
  fs::path dir_;
};

TEST_F(TempFilesTest, SigtermRemovesARegisteredTempFileAndStillKillsTheProcess) {
  const std::string path = (dir_ / "out.csv.tmp.1").string();
  const int status = RunChild(path, SIGTERM, false);
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_FALSE(fs::exists(path));
}

TEST_F(TempFilesTest, SigintRemovesARegisteredTempFileAndStillKillsTheProcess) {
  const std::string path = (dir_ / "out.csv.tmp.2").string();
  const int status = RunChild(path, SIGINT, false);
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGINT);
  EXPECT_FALSE(fs::exists(path));
}

TEST_F(TempFilesTest, AFileNoLongerRegisteredIsLeftAlone) {
  // Once a writer has renamed its temporary into place it drops the registration: the name may
  // then belong to another file, which a signal must not remove.
  const std::string path = (dir_ / "kept").string();
  const int status = RunChild(path, SIGTERM, true);
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_TRUE(fs::exists(path));
}

}  // namespace
}  // namespace meshplan
