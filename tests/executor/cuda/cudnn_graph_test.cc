// The cuDNN path's graphs (executor/cuda/cudnn_attention.h) described for the blocks the schemes
// make and validated by the cuDNN frontend on the host: no GPU needed, so the shapes, strides,
// GQA grouping and mask attributes the path gives cuDNN are checked in CI. Skipped where the
// build has no cuDNN path or libcudnn.so.9 cannot be opened (the GPU tests run the graphs).
#include <gtest/gtest.h>

#if MESHPLAN_HAVE_CUDA
#include <numeric>
#include <string>
#include <vector>

#include "executor/cuda/cudnn_attention.h"

namespace meshplan::exec::cuda {
namespace {

std::vector<int64_t> Range(int64_t first, int64_t count) {
  std::vector<int64_t> v(static_cast<size_t>(count));
  std::iota(v.begin(), v.end(), first);
  return v;
}

// A view of `rows` rows holding heads [head_begin, head_begin + heads); data is never read.
TensorView View(const std::vector<int64_t>& positions, int32_t head_begin, int32_t heads) {
  TensorView v;
  v.data = reinterpret_cast<void*>(uintptr_t{4096});
  v.rows = static_cast<int64_t>(positions.size());
  v.head_begin = head_begin;
  v.heads = heads;
  v.host_positions = positions.data();
  return v;
}

BlockProblem Problem(MaskKind mask_kind, int32_t head_begin, int32_t head_count, int32_t group) {
  BlockProblem p;
  p.type = InputType::kBf16;
  p.dim = 128;
  p.scale = 0.0883883476f;  // 1 / sqrt(128)
  p.head_begin = head_begin;
  p.head_count = head_count;
  p.group_size = group;
  p.mask.kind = mask_kind;
  return p;
}

// Skips the test when this machine cannot validate cuDNN graphs; else returns the result.
#define VALIDATE_OR_SKIP(result_var, call)                                         \
  auto result_var = (call);                                                        \
  if (!result_var.ok() &&                                                          \
      (result_var.status().message().find("built without") != std::string::npos || \
       result_var.status().message().find("cannot open") != std::string::npos)) {  \
    GTEST_SKIP() << result_var.status().message();                                 \
  }

TEST(CudnnGraphs, DiagonalCausalBlockWithGqaValidatesForwardAndBackward) {
  // 8 query heads over 2 KV heads (group 4), the whole heads of the views: one top-left triangle.
  const auto pos = Range(1024, 256);
  const TensorView q = View(pos, 0, 8), k = View(pos, 0, 2);
  const BlockProblem p = Problem(MaskKind::kCausal, 0, 8, 4);
  VALIDATE_OR_SKIP(fwd, ValidateCudnnBlockOnHost(p, q, k, nullptr, false));
  ASSERT_TRUE(fwd.ok()) << fwd.status().message();
  EXPECT_EQ(*fwd, 1);
  auto bwd = ValidateCudnnBlockOnHost(p, q, k, &q, true);
  ASSERT_TRUE(bwd.ok()) << bwd.status().message();
  EXPECT_EQ(*bwd, 1);
}

TEST(CudnnGraphs, ZigzagShardAgainstAnOffsetShardValidatesEveryPiece) {
  // Zigzag shards of 4 ranks, 8 chunks of 64 tokens: rank 1 holds chunks 1 and 6, rank 2 chunks 2
  // and 5. Rank 2's queries against rank 1's keys: chunk 2 sees chunk 1 (full); chunk 5 sees
  // chunk 1 (full, merged with nothing after it as chunk 6 follows) ... the split decides; every
  // piece's graph must validate, among them strided views (the block's Q and K are views into
  // shards holding more heads than it computes: heads 4..7 of 8, KV head 1 of 2).
  std::vector<int64_t> r1 = Range(64, 64), r2 = Range(128, 64);
  const auto r1b = Range(384, 64), r2b = Range(320, 64);
  r1.insert(r1.end(), r1b.begin(), r1b.end());
  r2.insert(r2.end(), r2b.begin(), r2b.end());
  const TensorView q = View(r2, 0, 8), k = View(r1, 0, 2);
  const BlockProblem p = Problem(MaskKind::kCausal, 4, 4, 4);
  VALIDATE_OR_SKIP(fwd, ValidateCudnnBlockOnHost(p, q, k, nullptr, false));
  ASSERT_TRUE(fwd.ok()) << fwd.status().message();
  EXPECT_GE(*fwd, 2);
  auto bwd = ValidateCudnnBlockOnHost(p, q, k, &q, true);
  ASSERT_TRUE(bwd.ok()) << bwd.status().message();
}

TEST(CudnnGraphs, OffsetDiagonalUsesABottomRightTriangleThatValidates) {
  // Queries 32..95 against keys 0..63: a bottom-right triangle (32 rows over 64 keys) and a full
  // rectangle (executor/kernels/attention_pieces.h).
  const auto qp = Range(32, 64), kp = Range(0, 64);
  const BlockProblem p = Problem(MaskKind::kCausal, 0, 2, 1);
  VALIDATE_OR_SKIP(fwd,
                   ValidateCudnnBlockOnHost(p, View(qp, 0, 2), View(kp, 0, 2), nullptr, false));
  ASSERT_TRUE(fwd.ok()) << fwd.status().message();
  EXPECT_EQ(*fwd, 2);
}

TEST(CudnnGraphs, StripedBlocksAreCudnnPiecesThatValidate) {
  // Striped shards of 8 ranks, 128 rows each: rank 3 holds tokens 3 + 8i. Against rank 5's keys
  // (5 + 8j), key j is visible to query i iff j <= i - 1: query row 0 sees nothing and rows 1..127
  // see a top-left triangle of keys 0..126 (executor/kernels/attention_pieces.h). Forward and
  // backward, GQA group 4 on a head slice.
  std::vector<int64_t> r3, r5;
  for (int64_t i = 0; i < 128; ++i) {
    r3.push_back(3 + 8 * i);
    r5.push_back(5 + 8 * i);
  }
  const TensorView q = View(r3, 0, 8), k = View(r5, 0, 2);
  const BlockProblem p = Problem(MaskKind::kCausal, 4, 4, 4);
  VALIDATE_OR_SKIP(fwd, ValidateCudnnBlockOnHost(p, q, k, nullptr, false));
  ASSERT_TRUE(fwd.ok()) << fwd.status().message();
  EXPECT_EQ(*fwd, 1);
  auto bwd = ValidateCudnnBlockOnHost(p, q, k, &q, true);
  ASSERT_TRUE(bwd.ok()) << bwd.status().message();
  EXPECT_EQ(*bwd, 1);
}

TEST(CudnnGraphs, BlocksCudnnCannotExpressAreRefused) {
  const auto pos = Range(0, 128);
  BlockProblem window = Problem(MaskKind::kWindow, 0, 4, 1);
  window.mask.window = 16;
  VALIDATE_OR_SKIP(
      w, ValidateCudnnBlockOnHost(window, View(pos, 0, 4), View(pos, 0, 4), nullptr, false));
  EXPECT_FALSE(w.ok());
  // A head slice that straddles KV heads without starting on a group: heads 2..5 with group 4.
  auto straddle = ValidateCudnnBlockOnHost(Problem(MaskKind::kCausal, 2, 4, 4), View(pos, 0, 8),
                                           View(pos, 0, 2), nullptr, false);
  EXPECT_FALSE(straddle.ok());
}

TEST(CudnnGraphs, ValidationRefusesWhatTheTargetCannotRun) {
  // cuDNN's fused backward takes head dims up to 128 on Ampere (sm_80) and up to 256 on Hopper:
  // the host validation must say so, or it checks nothing.
  const auto pos = Range(0, 256);
  BlockProblem p = Problem(MaskKind::kCausal, 0, 4, 1);
  p.dim = 192;
  const TensorView q = View(pos, 0, 4);
  VALIDATE_OR_SKIP(hopper, ValidateCudnnBlockOnHost(p, q, q, &q, true, 90));
  EXPECT_TRUE(hopper.ok()) << hopper.status().message();
  auto ampere = ValidateCudnnBlockOnHost(p, q, q, &q, true, 80);
  ASSERT_FALSE(ampere.ok());
  EXPECT_NE(ampere.status().message().find("cuDNN graph of a piece"), std::string::npos)
      << ampere.status().message();
}

}  // namespace
}  // namespace meshplan::exec::cuda
#endif  // MESHPLAN_HAVE_CUDA
