// ReadTextFile, the one capped reader every input file goes through (issue 49): files past
// kMaxTextFileBytes are refused, regular ones before any byte is read, streams after the limit.
#include "core/base/toml_util.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace meshplan {
namespace {

std::filesystem::path ScratchDir() {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("meshplan_toml_util_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(ReadTextFile, ReadsAFileWhole) {
  const auto path = ScratchDir() / "small.txt";
  std::ofstream(path) << "a = 1\nb = \"two\"\n";
  auto text = ReadTextFile(path.string());
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(*text, "a = 1\nb = \"two\"\n");
  std::filesystem::remove_all(path.parent_path());
}

TEST(ReadTextFile, RefusesARegularFilePastTheLimitBeforeReadingIt) {
  // A sparse file one byte past the limit: its size alone refuses it (no 64 MiB is read).
  const auto path = ScratchDir() / "big.log";
  std::ofstream(path).close();
  std::filesystem::resize_file(path, kMaxTextFileBytes + 1);
  auto text = ReadTextFile(path.string());
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().message(),
            path.string() + ": larger than 64 MiB, too large for an input file");
  // At the limit exactly it is read (64 MiB of zero bytes).
  std::filesystem::resize_file(path, kMaxTextFileBytes);
  auto at_limit = ReadTextFile(path.string());
  ASSERT_TRUE(at_limit.ok()) << at_limit.status().message();
  EXPECT_EQ(at_limit->size(), kMaxTextFileBytes);
  std::filesystem::remove_all(path.parent_path());
}

TEST(ReadTextFile, RefusesAnEndlessStreamAtTheLimit) {
  auto text = ReadTextFile("/dev/zero");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().message(), "/dev/zero: larger than 64 MiB, too large for an input file");
}

TEST(ReadTextFile, NamesAMissingFileAndADirectory) {
  EXPECT_EQ(ReadTextFile("/nonexistent/x.toml").status().message(),
            "/nonexistent/x.toml: cannot open file");
  EXPECT_EQ(ReadTextFile("/tmp").status().message(), "/tmp: is a directory, expected a file");
}

}  // namespace
}  // namespace meshplan
