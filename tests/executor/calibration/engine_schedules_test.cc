// The calibration runs' schedules (executor/calibration/engine_schedules.h): each piece's block
// has the piece's visible pairs and cut rows, counted by the mask's own pair counter over the
// block's shards, and the runs execute on the host backend with the ops they time.
#include "executor/calibration/engine_schedules.h"

#include <gtest/gtest.h>

#include <string>

#include "core/sequence/layout.h"
#include "core/sequence/mask.h"
#include "executor/execute.h"
#include "executor/io/input_source.h"

namespace meshplan::exec {
namespace {

// The compute ops of the run's timed ranks, as (q shard, kv shard): one block, the same everywhere.
void ExpectOneBlock(const CalibrationRun& run, int32_t* q, int32_t* kv) {
  *q = *kv = -1;
  for (size_t r = 0; r < run.timed.size(); ++r) {
    for (uint32_t i : run.timed[r]) {
      const Op& op = run.schedule.ranks[r].ops[i];
      ASSERT_EQ(op.kind, OpKind::kCompute);
      if (run.schedule.num_ranks > 1 && op.q_shard == op.kv_shard) {
        EXPECT_EQ(op.q_shard, static_cast<int32_t>(r));  // a rank's own block
        continue;
      }
      if (*q < 0) {
        *q = op.q_shard;
        *kv = op.kv_shard;
      }
      EXPECT_EQ(op.q_shard, *q);
      EXPECT_EQ(op.kv_shard, *kv);
    }
  }
  if (*q < 0) *q = *kv = 0;
}

TEST(KernelRun, EachPiecesBlockHasThePiecesPairsAndCutRows) {
  for (int64_t n : {int64_t{128}, int64_t{512}}) {
    for (BlockPiece piece : kBlockPieces) {
      for (int ranks : {1, 3}) {
        const std::string what = std::string(BlockPieceName(piece)) + " n=" + std::to_string(n) +
                                 " ranks=" + std::to_string(ranks);
        auto run = KernelRun(piece, n, 2, 16, false, ranks, 2, InputType::kFp32);
        ASSERT_TRUE(run.ok()) << what << ": " << run.status().message();
        int32_t q = 0, kv = 0;
        ExpectOneBlock(*run, &q, &kv);
        const PairCounter counter(run->workload.mask, run->workload.seq_len);
        const BlockWork work = run->schedule.layout.Work(counter, q, kv);
        EXPECT_EQ(work.pairs, PieceVisiblePairs(piece, n)) << what;
        EXPECT_EQ(work.cut_rows, PieceCutRows(piece, n)) << what;
        // Every rank that computes times `repeats` blocks; a lone two-shard block has a helper.
        int computing = 0;
        for (const auto& ops : run->timed) {
          if (ops.empty()) continue;
          ++computing;
          EXPECT_EQ(ops.size(), 2u) << what;
        }
        EXPECT_EQ(computing, ranks) << what;
      }
    }
  }
}

TEST(KernelRun, RefusesSizesThePiecesCannotSplit) {
  EXPECT_FALSE(KernelRun(BlockPiece::kChunked, 126, 1, 16, false, 1, 1, InputType::kFp32).ok());
  EXPECT_FALSE(KernelRun(BlockPiece::kFull, 128, 1, 16, false, 0, 1, InputType::kFp32).ok());
  EXPECT_FALSE(KernelRun(BlockPiece::kFull, 128, 1, 16, false, 1, 0, InputType::kFp32).ok());
}

// Every run executes on the host backend, one engine for all ranks, producing only what it times.
TEST(CalibrationRuns, ExecuteOnTheHostBackend) {
  ExecuteConfig config;
  config.transport = TransportKind::kLocal;
  config.keep_outputs = false;
  config.check_coverage = false;
  std::vector<CalibrationRun> runs;
  for (BlockPiece piece : kBlockPieces) {
    for (bool backward : {false, true}) {
      auto run = KernelRun(piece, 64, 2, 16, backward, 2, 2, InputType::kFp32);
      ASSERT_TRUE(run.ok()) << run.status().message();
      runs.push_back(std::move(*run));
    }
  }
  auto merge = MergeRun(64, 2, 16, 3, InputType::kFp32);
  ASSERT_TRUE(merge.ok()) << merge.status().message();
  runs.push_back(std::move(*merge));
  auto message = MessageRun(4096, 16, 3, InputType::kFp32);
  ASSERT_TRUE(message.ok()) << message.status().message();
  runs.push_back(std::move(*message));
  for (const CalibrationRun& run : runs) {
    const SeededInputSource inputs(run.workload, 1);
    auto result = Execute(run.schedule, run.workload, inputs, config);
    ASSERT_TRUE(result.ok()) << run.workload.Describe() << ": " << result.status().message();
    for (size_t r = 0; r < run.timed.size(); ++r) {
      for (uint32_t op : run.timed[r]) {
        ASSERT_LT(op, result->timings[r].size());
        EXPECT_LE(result->timings[r][op].start_s, result->timings[r][op].end_s);
      }
    }
  }
  // With the coverage check on, a run that leaves outputs unproduced is refused: the message run
  // computes nothing at all.
  ExecuteConfig strict = config;
  strict.check_coverage = true;
  const CalibrationRun& messages = runs.back();
  auto refused = Execute(messages.schedule, messages.workload,
                         SeededInputSource(messages.workload, 1), strict);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("no rank produced"), std::string::npos)
      << refused.status().message();
}

TEST(MessageRun, RoundsToWholeRows) {
  EXPECT_EQ(MessageRunBytes(4096, 128, InputType::kBf16), 4096);
  EXPECT_EQ(MessageRunBytes(4096, 128, InputType::kFp32), 4096);
  EXPECT_EQ(MessageRunBytes(100, 128, InputType::kFp32), 512);  // at least one row
  EXPECT_EQ(MessageRunBytes(1000, 128, InputType::kBf16), 768);
}

}  // namespace
}  // namespace meshplan::exec
