#include "core/base/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

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

// Issue 17: the rename replaced whatever the output path named. A symbolic link is followed and
// its target replaced; the link stays a link.
TEST_F(AtomicFileTest, FollowsASymlinkAndReplacesItsTarget) {
  const fs::path target = dir_ / "real.csv";
  const fs::path link = dir_ / "link.csv";
  ASSERT_TRUE(WriteFileAtomically(target.string(), "old\n").ok());
  fs::create_symlink("real.csv", link);  // relative, resolved against the link's directory
  ASSERT_TRUE(WriteFileAtomically(link.string(), "new\n").ok());
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(Read(target), "new\n");
  EXPECT_EQ(FilesIn(dir_), 2);  // the link and its target, no temporary file
}

TEST_F(AtomicFileTest, ADanglingSymlinkCreatesItsTarget) {
  const fs::path link = dir_ / "link.csv";
  fs::create_symlink(dir_ / "made.csv", link);
  ASSERT_TRUE(WriteFileAtomically(link.string(), "x").ok());
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(Read(dir_ / "made.csv"), "x");
}

TEST_F(AtomicFileTest, ALinkLoopIsRefusedNamingThePath) {
  const fs::path a = dir_ / "a", b = dir_ / "b";
  fs::create_symlink(b, a);
  fs::create_symlink(a, b);
  Status status = WriteFileAtomically(a.string(), "x");
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), ErrorCode::kIo);
  EXPECT_EQ(status.message().rfind(a.string() + ": has more than 40 levels of symbolic links", 0),
            0u)
      << status.message();
}

// A FIFO is written directly, as a shell redirection would, and stays a FIFO.
TEST_F(AtomicFileTest, AFifoIsWrittenDirectlyNotReplaced) {
  const fs::path fifo = dir_ / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string received;
  std::thread reader([&] { received = Read(fifo); });  // opening blocks until the writer opens
  const Status status = WriteFileAtomically(fifo.string(), "through the pipe\n");
  reader.join();
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(received, "through the pipe\n");
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_EQ(FilesIn(dir_), 1);
}

TEST_F(AtomicFileTest, ASymlinkToAFifoWritesTheFifo) {
  const fs::path fifo = dir_ / "pipe", link = dir_ / "out.svg";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  fs::create_symlink(fifo, link);
  std::string received;
  std::thread reader([&] { received = Read(fifo); });
  const Status status = WriteFileAtomically(link.string(), "<svg/>");
  reader.join();
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(received, "<svg/>");
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_TRUE(fs::is_symlink(link));
}

TEST_F(AtomicFileTest, DashWritesToStandardOutput) {
  ::testing::internal::CaptureStdout();
  const Status status = WriteFileAtomically("-", "to stdout\n");
  const std::string out = ::testing::internal::GetCapturedStdout();
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(out, "to stdout\n");
  EXPECT_FALSE(fs::exists("-"));
}

TEST_F(AtomicFileTest, AReplacedFileKeepsItsPermissionBits) {
  const fs::path path = dir_ / "plan.toml";
  ASSERT_TRUE(WriteFileAtomically(path.string(), "a").ok());
  fs::permissions(path,
                  fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);  // 0640
  ASSERT_TRUE(WriteFileAtomically(path.string(), "b").ok());
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  EXPECT_EQ(Read(path), "b");
}

TEST_F(AtomicFileTest, ASocketIsRefusedAndLeftAlone) {
  const fs::path path = dir_ / "sock";
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0) << path;
  const Status status = WriteFileAtomically(path.string(), "x");
  ::close(fd);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(),
            path.string() +
                ": is neither a file, a character device nor a FIFO; refusing to write to it");
  EXPECT_TRUE(fs::is_socket(path));
  EXPECT_EQ(FilesIn(dir_), 1);
}

TEST_F(AtomicFileTest, AReadOnlyFileIsNotReplaced) {
  // Issue 33: a 0444 file was replaced without a word (rename ignores its mode, root its bits).
  const fs::path file = dir_ / "kept.csv";
  std::ofstream(file) << "old\n";
  fs::permissions(file, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  const Status check = CheckOutputPath(file.string());
  EXPECT_EQ(check.code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(check.message(), file.string() + ": is read-only; make it writable or remove it first");
  EXPECT_FALSE(WriteFileAtomically(file.string(), "new\n").ok());
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "old");
}

TEST_F(AtomicFileTest, CheckOutputPathAcceptsWhatCanBeWrittenAndNamesWhatCannot) {
  EXPECT_TRUE(CheckOutputPath((dir_ / "new.csv").string()).ok());
  EXPECT_TRUE(CheckOutputPath("-").ok());
  const fs::path fifo = dir_ / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_TRUE(CheckOutputPath(fifo.string()).ok());  // checked without opening it
  const Status directory = CheckOutputPath(dir_.string());
  EXPECT_EQ(directory.code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(directory.message(), dir_.string() + ": is a directory, expected a file to write");
  const std::string missing = (dir_ / "no" / "out.csv").string();
  EXPECT_EQ(CheckOutputPath(missing).message(),
            missing + ": directory " + (dir_ / "no").string() + " does not exist");
}

TEST_F(AtomicFileTest, OutputDirectoryOnAKernelFileSystemIsRefusedBeforeAnyWork) {
  // Issue 49: `execute --outputs /proc/nonexistent/x` ran the whole plan, then failed to create
  // the directory (exit 1): /proc's nearest existing ancestor passes access(W_OK) as root.
  const Status proc = CheckOutputDirectory("/proc/nonexistent/x");
  EXPECT_EQ(proc.code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(proc.message(),
            "/proc/nonexistent/x: cannot be created: /proc is on the kernel's /proc file system, "
            "where no file is created");
  EXPECT_FALSE(CheckOutputDirectory("/sys/meshplan-outputs").ok());
  EXPECT_EQ(CheckOutputDirectory("/dev/meshplan-outputs").message(),
            "/dev/meshplan-outputs: cannot be created: nothing is created under /dev");
  // An ordinary directory to create is fine, as before.
  EXPECT_TRUE(CheckOutputDirectory((dir_ / "new" / "outputs").string()).ok());
}

}  // namespace
}  // namespace meshplan
