// AppendCsvRows (issue 49): rows onto a CSV file whose header matches, created when absent, and
// every row of every concurrent appender kept once. Expected files are written out by hand.
#include "core/base/csv_append.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace meshplan {
namespace {

class CsvAppendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("meshplan_csv_append_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  static std::string Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  static void Write(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
  }
  std::filesystem::path dir_;
};

TEST_F(CsvAppendTest, ANewFileGetsTheHeaderThenTheRows) {
  const std::string path = Path("new.csv");
  ASSERT_TRUE(AppendCsvRows(path, "a,b\n", "1,2\n").ok());
  ASSERT_TRUE(AppendCsvRows(path, "a,b\n", "3,4\n").ok());
  EXPECT_EQ(Read(path), "a,b\n1,2\n3,4\n");
}

TEST_F(CsvAppendTest, AnEmptyFileIsANewOne) {
  const std::string path = Path("empty.csv");
  Write(path, "");
  ASSERT_TRUE(AppendCsvRows(path, "a,b\n", "1,2\n").ok());
  EXPECT_EQ(Read(path), "a,b\n1,2\n");
}

TEST_F(CsvAppendTest, AByteOrderMarkAndCrlfEndingsStillMatchTheHeader) {
  const std::string bom = Path("bom.csv"), crlf = Path("crlf.csv");
  Write(bom,
        "\xEF\xBB\xBF"
        "a,b\n1,2\n");
  Write(crlf, "a,b\r\n1,2\r\n");
  ASSERT_TRUE(AppendCsvRows(bom, "a,b\n", "3,4\n").ok());
  ASSERT_TRUE(AppendCsvRows(crlf, "a,b\n", "3,4\n").ok());
  EXPECT_EQ(Read(bom),
            "\xEF\xBB\xBF"
            "a,b\n1,2\n3,4\n");
  EXPECT_EQ(Read(crlf), "a,b\r\n1,2\r\n3,4\n");
}

TEST_F(CsvAppendTest, ALastLineWithoutItsNewlineGetsOne) {
  const std::string path = Path("open.csv");
  Write(path, "a,b\n1,2");
  ASSERT_TRUE(AppendCsvRows(path, "a,b\n", "3,4\n").ok());
  EXPECT_EQ(Read(path), "a,b\n1,2\n3,4\n");
}

TEST_F(CsvAppendTest, AnotherHeaderIsRefusedAndTheFileUnchanged) {
  const std::string path = Path("other.csv");
  Write(path, "x,y\n5,6\n");
  const Status st = AppendCsvRows(path, "a,b\n", "1,2\n");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(st.message(), path +
                              ": --append: the file's header is not this report's, so rows would "
                              "not line up (file: \"x,y\"; this report: \"a,b\"); write to a new "
                              "file or leave out --append");
  EXPECT_EQ(Read(path), "x,y\n5,6\n");
}

TEST_F(CsvAppendTest, AFifoGetsTheRowsWithoutBeingRead) {
  // Reading a FIFO would wait for a writer that never comes: the rows go straight in, and a
  // reader on the other end gets exactly them.
  const std::string fifo = Path("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] { got = Read(fifo); });
  EXPECT_TRUE(AppendCsvRows(fifo, "a,b\n", "1,2\n").ok());
  reader.join();
  EXPECT_EQ(got, "1,2\n");
}

TEST_F(CsvAppendTest, ADirectoryIsRefused) {
  EXPECT_FALSE(AppendCsvRows(dir_.string(), "a,b\n", "1,2\n").ok());
}

TEST_F(CsvAppendTest, ConcurrentAppendersKeepEveryRowOnce) {
  // 16 writers x 10 rounds, each its own open file (as separate processes have): 160 distinct
  // rows, each present exactly once, after one header; no line is a mix of two rows.
  const std::string path = Path("shared.csv");
  constexpr int kWriters = 16, kRounds = 10;
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      for (int r = 0; r < kRounds; ++r) {
        const std::string row =
            "w" + std::to_string(w) + "," + std::to_string(r) + "," + std::string(200, 'x') + "\n";
        EXPECT_TRUE(AppendCsvRows(path, "writer,round,pad\n", row).ok());
      }
    });
  }
  for (std::thread& t : writers) t.join();
  std::istringstream lines(Read(path));
  std::string line;
  ASSERT_TRUE(std::getline(lines, line));
  EXPECT_EQ(line, "writer,round,pad");
  std::set<std::string> seen;
  int count = 0;
  while (std::getline(lines, line)) {
    ++count;
    EXPECT_EQ(line.size(), line.find(',', line.find(',') + 1) + 1 + 200) << line;
    seen.insert(line.substr(0, line.find(',', line.find(',') + 1)));
  }
  EXPECT_EQ(count, kWriters * kRounds);
  EXPECT_EQ(static_cast<int>(seen.size()), kWriters * kRounds);
}

}  // namespace
}  // namespace meshplan
