// ParseNcclTestsLog (core/cluster/nccl_tests_log.h) on a log laid out as nccl-tests prints it; the
// expected values are read off the sample by hand.
#include "core/cluster/nccl_tests_log.h"

#include <gtest/gtest.h>

#include <string>

namespace meshplan {
namespace {

// all_reduce_perf -b 8 -e 8G -f 2 -g 1 under mpirun on two hosts of 2 GPUs each (rows cut down).
constexpr const char* kLog =
    "# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20\n"
    "#\n"
    "# Using devices\n"
    "#  Rank  0 Group  0 Pid  11 on     node-a device  0 [0x18] NVIDIA H100 80GB HBM3\n"
    "#  Rank  1 Group  0 Pid  12 on     node-a device  1 [0x2a] NVIDIA H100 80GB HBM3\n"
    "#  Rank  2 Group  0 Pid  13 on     node-b device  0 [0x18] NVIDIA H100 80GB HBM3\n"
    "#  Rank  3 Group  0 Pid  14 on     node-b device  1 [0x2a] NVIDIA H100 80GB HBM3\n"
    "#\n"
    "#                                                 out-of-place                       "
    "in-place\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time "
    "  algbw   busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us) "
    " (GB/s)  (GB/s)\n"
    "           8             2     float     sum      -1    36.25    0.00    0.00      0    35.80 "
    "   0.00    0.00      0\n"
    "     1048576        262144     float     sum      -1    120.5    8.70   13.05      0    119.8 "
    "   8.75   13.13      0\n"
    "  4294967296    1073741824     float     sum      -1  48375.3   88.78  133.17      0  48359.7 "
    "  88.81  133.22      0\n"
    "  8589934592    2147483648     float     sum      -1  96210.1   89.28  133.92      0  96300.2 "
    "  89.20  133.80      0\n"
    "# Out of bounds values : 0 OK\n"
    "# Avg bus bandwidth    : 70.04\n"
    "#\n";

TEST(NcclTestsLog, ReadsRanksHostsDeviceAndThePeakBusBandwidth) {
  auto r = ParseNcclTestsLog(kLog, "ar.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->ranks, 4);  // four "# Rank" lines
  EXPECT_EQ(r->hosts, 2);  // node-a and node-b
  EXPECT_EQ(r->device, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(r->rows, 4);
  // The highest busbw of all eight columns: out-of-place 133.92 at 8589934592 bytes (in-place
  // 133.80 there, 133.22 at 4 GiB).
  EXPECT_DOUBLE_EQ(r->peak_busbw_GBps, 133.92);
  EXPECT_EQ(r->peak_bytes, 8589934592);
}

TEST(NcclTestsLog, AFullMeshLevelTakesTheBusbwAsTheLinksToTheOtherRanks) {
  NcclTestsResult measured;
  measured.peak_busbw_GBps = 294;
  measured.ranks = 8;
  // A switch level: the busbw is each GPU's rate.
  NetworkLevel level{"nvlink", LinkKind::kSwitch, 8, 450e9, 1e-6, 1.0, {}, {}};
  EXPECT_DOUBLE_EQ(LevelBandwidthFromBusbw(level, measured), 294e9);
  // A full mesh of 8: the rings spread over each GPU's 7 links, 294 / 7 = 42 GB/s a link.
  level.kind = LinkKind::kFullMesh;
  EXPECT_DOUBLE_EQ(LevelBandwidthFromBusbw(level, measured), 42e9);
  // 4 ranks of the 8: 3 links each, 294 / 3 = 98; a log naming no ranks: the group, 7 links.
  measured.ranks = 4;
  EXPECT_DOUBLE_EQ(LevelBandwidthFromBusbw(level, measured), 98e9);
  measured.ranks = 0;
  EXPECT_DOUBLE_EQ(LevelBandwidthFromBusbw(level, measured), 42e9);
  // More ranks than the group (the log crossed hosts): the group's 7 links.
  measured.ranks = 16;
  EXPECT_DOUBLE_EQ(LevelBandwidthFromBusbw(level, measured), 42e9);
}

TEST(NcclTestsLog, RefusesALogWithoutRowsAndAMalformedRow) {
  auto none = ParseNcclTestsLog("# nThread 1\n# nothing measured\n", "empty.log");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(none.status().message().rfind("empty.log: no nccl-tests result rows", 0), 0u)
      << none.status().message();

  const std::string header =
      "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n";
  auto short_row = ParseNcclTestsLog(header + "8 2 float sum -1 36.25 0.00\n", "short.log");
  ASSERT_FALSE(short_row.ok());
  EXPECT_EQ(short_row.status().message(),
            "short.log:2: a result row with 7 columns, the header has 13");

  auto bad =
      ParseNcclTestsLog(header + "8 2 float sum -1 36.25 0.00 nan 0 35.8 0.00 0.00 0\n", "bad.log");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "bad.log:2: busbw 'nan' is not a finite number >= 0");
}

TEST(NcclTestsLog, RefusesASizeThatIsNotAWholeNumberOfBytes) {
  // Found by fuzz_nccl_tests_log: a 36-digit size was converted to int64 (undefined behaviour).
  const std::string header =
      "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n";
  const std::string rest = " 2 float sum -1 36.25 0.00 0.00 0 35.8 0.00 0.00 0\n";
  auto huge = ParseNcclTestsLog(header + std::string(36, '1') + rest, "huge.log");
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().message(),
            "huge.log:2: size '" + std::string(36, '1') + "' is not a whole number of bytes");
  auto fraction = ParseNcclTestsLog(header + "8.5" + rest, "half.log");
  ASSERT_FALSE(fraction.ok());
  EXPECT_EQ(fraction.status().message(), "half.log:2: size '8.5' is not a whole number of bytes");
  // 2^53 bytes is still a size.
  EXPECT_TRUE(ParseNcclTestsLog(header + "9007199254740992" + rest, "big.log").ok());
}

}  // namespace
}  // namespace meshplan
