// Issue 17's cases for `meshplan sweep` (tools/sweep_command.cc): sweep files whose values crashed
// or whose errors did not name the file, and outputs that are not regular files.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "tests/tools/cli_fixture.h"

namespace meshplan {
namespace {

using Sweep17 = testing::CliFixture;

constexpr char kSmallSweep[] = "sweep --gpus 8 --seq 64K --schemes ring -q";

TEST_F(Sweep17, SweepFileWithZeroToAPowerIsOneErrorLineNotSigfpe) {
  const std::string file = Write("sweep.toml", "seq = \"0^2\"\n");
  ExpectRefused("sweep --sweep-file " + file,
                file + ": seq: '0^2' is not a valid count: the base of a power must be at least 1");
}

TEST_F(Sweep17, SweepFileWorkloadErrorsNameTheSweepFile) {
  const std::string file =
      Write("sweep.toml", "heads = 60\n");  // 60 is not a multiple of the 8 KV heads
  ExpectRefused("sweep --sweep-file " + file,
                file + ": workload: heads (60) must be a multiple of kv-heads (8)");
}

TEST_F(Sweep17, DashWritesTheRowsToStandardOutput) {
  const testing::CliResult r = Run(std::string(kSmallSweep) + " -o -");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("topology,gpus,seq_len,scheme,", 0), 0u) << r.out;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "-"));
}

TEST_F(Sweep17, AFifoGivenAsTheOutputIsWrittenNotReplaced) {
  const std::filesystem::path fifo = dir_ / "rows.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string received;
  std::thread reader([&] { received = Read(fifo); });  // a reader, as `cat rows.fifo` would be
  const testing::CliResult r = Run(std::string(kSmallSweep) + " -o " + fifo.string());
  reader.join();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(received.rfind("topology,gpus,seq_len,scheme,", 0), 0u) << received;
  EXPECT_TRUE(std::filesystem::is_fifo(fifo));
}

}  // namespace
}  // namespace meshplan
