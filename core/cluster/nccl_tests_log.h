// Reading the output of NVIDIA's nccl-tests (all_reduce_perf, all_gather_perf, ...), so that a
// cluster file's bandwidths can come from the bus bandwidth measured on the cluster itself
// (`meshplan topo from-nccl-tests`; topologies/README.md recommends measured busbw).
//
// The parts read: the "#  Rank N Group G Pid P on HOST device D [BUS] NAME" lines (ranks, hosts,
// the device's name), the column header ("#  size  count  type  redop  root  time  algbw  busbw
// #wrong  time  algbw  busbw  #wrong") and the rows of numbers under it; the first "busbw" column
// is out-of-place, the second in-place. Other lines are ignored.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/base/status.h"
#include "core/cluster/topology.h"

namespace meshplan {

struct NcclTestsResult {
  std::string collective;      // "all_reduce_perf", ... when the log names its program, else ""
  int64_t ranks = 0;           // "# Rank" lines
  int64_t hosts = 0;           // distinct hosts among them
  std::string device;          // rank 0's device name ("NVIDIA H100 80GB HBM3"), or ""
  int64_t rows = 0;            // result rows read
  double peak_busbw_GBps = 0;  // the highest busbw of any row, out-of-place or in-place
  int64_t peak_bytes = 0;      // the message size it was measured at
};

// Errors (kInvalidInput, naming `source` and the line): no result rows, a row with fewer
// columns than the header, a size that is not a whole number of bytes (at most 2^53), a busbw
// that is not a finite number >= 0.
Result<NcclTestsResult> ParseNcclTestsLog(std::string_view text, const std::string& source);

// The `bandwidth_GBps` of `level` (in bytes per second) that a measured bus bandwidth stands for:
// the busbw itself, a GPU's rate over the level, except on a full-mesh level, whose
// bandwidth_GBps is one link's: there NCCL's and RCCL's rings spread a collective over the links
// to every other rank (topologies/README.md, "Full meshes"), so busbw / (n - 1), n the log's ranks
// (at most the level's group_size; the group when the log names none).
double LevelBandwidthFromBusbw(const NetworkLevel& level, const NcclTestsResult& measured);

}  // namespace meshplan
