#include "core/atomic_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace meshplan {
namespace {

namespace fs = std::filesystem;

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("meshplan_atomic_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  static std::string Read(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }
  int FilesIn(const fs::path& dir) {
    int n = 0;
    for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir)) ++n;
    return n;
  }
  fs::path dir_;
};

TEST_F(AtomicFileTest, WritesNewFile) {
  const fs::path path = dir_ / "out.toml";
  ASSERT_TRUE(WriteFileAtomically(path.string(), "a = 1\n").ok());
  EXPECT_EQ(Read(path), "a = 1\n");
  EXPECT_EQ(FilesIn(dir_), 1);  // no temporary file left behind
}

TEST_F(AtomicFileTest, ReplacesExistingFileAndKeepsBinaryContents) {
  const fs::path path = dir_ / "out.bin";
  ASSERT_TRUE(WriteFileAtomically(path.string(), "old contents that are longer").ok());
  const std::string binary("x\0y\n\r\xff", 6);
  ASSERT_TRUE(WriteFileAtomically(path.string(), binary).ok());
  EXPECT_EQ(Read(path), binary);
  EXPECT_EQ(FilesIn(dir_), 1);
}

TEST_F(AtomicFileTest, EmptyContents) {
  const fs::path path = dir_ / "empty";
  ASSERT_TRUE(WriteFileAtomically(path.string(), "").ok());
  EXPECT_TRUE(fs::exists(path));
  EXPECT_EQ(fs::file_size(path), 0u);
}

TEST_F(AtomicFileTest, MissingDirectoryIsAnIoErrorNamingThePath) {
  const fs::path path = dir_ / "no" / "such" / "dir" / "out.toml";
  Status status = WriteFileAtomically(path.string(), "x");
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), ErrorCode::kIo);
  EXPECT_NE(status.message().find(path.string()), std::string::npos);
  EXPECT_FALSE(fs::exists(path));
}

TEST_F(AtomicFileTest, RenameOntoDirectoryFailsAndLeavesNothingBehind) {
  // The target is a non-empty directory: the temporary file is written, the rename fails, and
  // the temporary must be removed while the directory stays as it was.
  const fs::path target = dir_ / "target";
  fs::create_directories(target / "inside");
  Status status = WriteFileAtomically(target.string(), "x");
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), ErrorCode::kIo);
  EXPECT_TRUE(fs::is_directory(target / "inside"));
  EXPECT_EQ(FilesIn(dir_), 1);
}

}  // namespace
}  // namespace meshplan
