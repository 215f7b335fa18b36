// The cuDNN path's graphs (executor/cuda/cudnn_attention.h) described for the blocks the schemes
// make and validated by the cuDNN frontend on the host: no GPU needed, so the shapes, strides,
// GQA grouping and mask attributes (corner-aligned causal masks, diagonal bands for sliding
// windows, and the pieces of document masks cut at document starts) the path gives cuDNN are
// checked in CI. Skipped where the build has no cuDNN path or
// libcudnn.so.9 cannot be opened (the GPU tests run the graphs).
#include <gtest/gtest.h>

#if MESHPLAN_HAVE_CUDA
#include <cmath>
#include <functional>
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
  p.mask.params.kind = mask_kind;
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
  // Documents whose starts only the device holds (no DeviceMask::host_doc_starts): the host
  // cannot cut the runs at them. (Documents with host starts split: the Document* tests below.)
  const BlockProblem docs = Problem(MaskKind::kDocuments, 0, 4, 1);
  VALIDATE_OR_SKIP(
      d, ValidateCudnnBlockOnHost(docs, View(pos, 0, 4), View(pos, 0, 4), nullptr, false));
  EXPECT_FALSE(d.ok());
  // A prefix mask: no piece split (executor/kernels/attention_pieces.h).
  BlockProblem prefix = Problem(MaskKind::kPrefix, 0, 4, 1);
  prefix.mask.params.prefix = 50;
  auto pre = ValidateCudnnBlockOnHost(prefix, View(pos, 0, 4), View(pos, 0, 4), nullptr, false);
  EXPECT_FALSE(pre.ok());
  // A window on positions that are neither a few runs of consecutive positions nor one
  // progression (steps 4 and 8 on 32 rows each): the own kernels' block, as a causal one is.
  std::vector<int64_t> by4, by8;
  for (int64_t i = 0; i < 32; ++i) {
    by4.push_back(4 * i);
    by8.push_back(8 * i);
  }
  BlockProblem window = Problem(MaskKind::kWindow, 0, 4, 1);
  window.mask.params.window = 16;
  auto w = ValidateCudnnBlockOnHost(window, View(by4, 0, 4), View(by8, 0, 4), nullptr, false);
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

// ---- Sliding windows: band pieces (diagonal band masks) ----

BlockProblem WindowProblem(int64_t w, InputType type, int32_t dim) {
  BlockProblem p = Problem(MaskKind::kWindow, 0, 8, 4);  // 8 query heads over 2 KV heads
  p.type = type;
  p.dim = dim;
  p.scale = 1.0f / std::sqrt(static_cast<float>(dim));
  p.mask.params.window = w;
  return p;
}

// The block of `qp` against `kp` made by `problem` (for an element type and head dim) validates
// on the host forward and backward, bf16 and fp16, head dims 64 and 128, in `pieces` pieces each
// time; a failure names `label` and the case.
::testing::AssertionResult BlockValidatesEverywhere(
    const std::vector<int64_t>& qp, const std::vector<int64_t>& kp,
    const std::function<BlockProblem(InputType, int32_t)>& problem, const std::string& label,
    int32_t pieces) {
  const TensorView q = View(qp, 0, 8), k = View(kp, 0, 2);
  for (InputType type : {InputType::kBf16, InputType::kFp16}) {
    for (int32_t dim : {64, 128}) {
      for (bool backward : {false, true}) {
        const BlockProblem p = problem(type, dim);
        auto got = ValidateCudnnBlockOnHost(p, q, k, backward ? &q : nullptr, backward);
        const std::string at = label + (type == InputType::kBf16 ? "bf16" : "fp16") + " d" +
                               std::to_string(dim) + (backward ? " backward" : " forward");
        if (!got.ok()) return ::testing::AssertionFailure() << at << ": " << got.status().message();
        if (*got != pieces) {
          return ::testing::AssertionFailure()
                 << at << ": " << *got << " pieces, expected " << pieces;
        }
      }
    }
  }
  return ::testing::AssertionSuccess();
}

// Validates the block's graphs under window:w forward and backward, bf16 and fp16, head dims 64
// and 128 (GQA group 4), and expects `pieces` pieces each time. For tests that have passed
// SKIP_WITHOUT_CUDNN: a machine that cannot validate cuDNN graphs fails here.
::testing::AssertionResult WindowBlockValidates(const std::vector<int64_t>& qp,
                                                const std::vector<int64_t>& kp, int64_t w,
                                                int32_t pieces) {
  return BlockValidatesEverywhere(
      qp, kp, [w](InputType type, int32_t dim) { return WindowProblem(w, type, dim); }, "", pieces);
}

// Skips the test when this machine cannot validate cuDNN graphs (probing with a causal block).
#define SKIP_WITHOUT_CUDNN()                                                                       \
  {                                                                                                \
    const auto probe_pos = Range(0, 64);                                                           \
    VALIDATE_OR_SKIP(probe, ValidateCudnnBlockOnHost(Problem(MaskKind::kCausal, 0, 2, 1),          \
                                                     View(probe_pos, 0, 2), View(probe_pos, 0, 2), \
                                                     nullptr, false));                             \
    ASSERT_TRUE(probe.ok()) << probe.status().message();                                           \
  }

TEST(CudnnGraphs, WindowDiagonalBlockIsATopLeftBandThatValidates) {
  // Tokens 1024..1279 against themselves, W = 64: the window's lower edge cuts the block, one
  // band with offset 0 and width 64: TOP_LEFT, left bound 64, right bound 0. W = 1: the diagonal
  // alone (left bound 1, right bound 0). W = 256 (the block) cuts nothing: the causal top-left
  // triangle.
  SKIP_WITHOUT_CUDNN();
  const auto pos = Range(1024, 256);
  EXPECT_TRUE(WindowBlockValidates(pos, pos, 64, 1));
  EXPECT_TRUE(WindowBlockValidates(pos, pos, 1, 1));
  EXPECT_TRUE(WindowBlockValidates(pos, pos, 256, 1));
}

TEST(CudnnGraphs, WindowBlockBeforeTheDiagonalIsAShiftedBandThatValidates) {
  // Queries 256..511 against keys 0..255, W = 64: queries 256..318 see keys from 193 + i on:
  // rows 0..62 over keys 193..255, offset 63 = W - 1: TOP_LEFT, right bound 63, left bound 1
  // (an upper triangle). W = 300: every row and key, offset 256, width 300: right bound 256,
  // left bound 44. One piece each.
  SKIP_WITHOUT_CUDNN();
  EXPECT_TRUE(WindowBlockValidates(Range(256, 256), Range(0, 256), 64, 1));
  EXPECT_TRUE(WindowBlockValidates(Range(256, 256), Range(0, 256), 300, 1));
}

TEST(CudnnGraphs, WindowBandEndingAtTheBottomRightCornerValidates) {
  // Queries 64..127 against keys 0..127 (fewer queries than keys), W = 32: the visible keys are
  // 33..127, 64 rows over 95 keys with offset 31 = 95 - 64: the band ends at the piece's
  // bottom-right corner, so BOTTOM_RIGHT with left bound 32 and right bound 0. W = 100: every
  // key, offset 64 = 128 - 64, BOTTOM_RIGHT, left bound 100. One piece each.
  SKIP_WITHOUT_CUDNN();
  EXPECT_TRUE(WindowBlockValidates(Range(64, 64), Range(0, 128), 32, 1));
  EXPECT_TRUE(WindowBlockValidates(Range(64, 64), Range(0, 128), 100, 1));
}

TEST(CudnnGraphs, WindowZigzagAndStripedBlocksValidate) {
  SKIP_WITHOUT_CUDNN();
  // Zigzag shards of 4 ranks, 8 chunks of 64 tokens: rank 2 holds chunks 2 (128..191) and 5
  // (320..383), rank 3 chunks 3 and 4, one run (192..319). Rank 3's queries against rank 2's
  // keys, W = 96: chunk 5 follows every query; against chunk 2 (c = 64), queries 192..286 see
  // something, 95 rows over 64 keys, too many rows for one band. Rows 0..31 still see key 128
  // (192 + i - 96 < 128): every key, a full 32 x 64 rectangle; rows 32..94 see keys from
  // 97 + i on: one band over keys 129..191, offset 95 = W - 1 (TOP_LEFT, right bound 95, left
  // bound 1): 2 pieces.
  std::vector<int64_t> r2 = Range(128, 64);
  const auto c5 = Range(320, 64);
  r2.insert(r2.end(), c5.begin(), c5.end());
  EXPECT_TRUE(WindowBlockValidates(Range(192, 128), r2, 96, 2));
  // Rank 2 against itself, W = 96: each chunk's diagonal block is a top-left triangle (96 > 64
  // cuts nothing), chunk 5 is 129 or more past chunk 2: 2 pieces.
  EXPECT_TRUE(WindowBlockValidates(r2, r2, 96, 2));
  // Striped shards of 8 ranks, 128 rows each: rank 3 holds 3 + 8i, rank 5 5 + 8j. W = 40:
  // q - k = 8(i - j) - 2 lies in [0, 40) iff i - j is 1..5: row 0 sees nothing, rows 1..127 a
  // band of width 5 over keys 0..126 with offset 0 (attention_pieces.h): 1 piece.
  std::vector<int64_t> s3, s5;
  for (int64_t i = 0; i < 128; ++i) {
    s3.push_back(3 + 8 * i);
    s5.push_back(5 + 8 * i);
  }
  EXPECT_TRUE(WindowBlockValidates(s3, s5, 40, 1));
}

TEST(CudnnGraphs, WindowBlocksOfContiguousShardsValidate) {
  // Every (query shard, key shard) block of 1024 tokens in 4 contiguous shards of 256, for
  // windows below, at and above a shard: each validates forward and backward (bf16, d 128), or
  // has nothing visible (0 pieces).
  SKIP_WITHOUT_CUDNN();
  for (int64_t w : {1, 40, 255, 256, 257, 600}) {
    for (int64_t qr = 0; qr < 4; ++qr) {
      for (int64_t kr = 0; kr < 4; ++kr) {
        const auto qp = Range(256 * qr, 256), kp = Range(256 * kr, 256);
        const TensorView q = View(qp, 0, 8), k = View(kp, 0, 2);
        const BlockProblem p = WindowProblem(w, InputType::kBf16, 128);
        for (bool backward : {false, true}) {
          auto got = ValidateCudnnBlockOnHost(p, q, k, backward ? &q : nullptr, backward);
          EXPECT_TRUE(got.ok()) << "W " << w << " shards " << qr << ", " << kr
                                << (backward ? " backward: " : " forward: ")
                                << got.status().message();
        }
      }
    }
  }
}

// ---- Documents: runs cut at the document starts, full or causal pieces per document ----

// A document block's problem: 8 query heads over 2 KV heads, documents from `starts` (held by
// the caller) given in host memory as the engine gives them (DeviceMask::host_doc_starts).
BlockProblem DocumentProblem(bool bidirectional, const std::vector<int64_t>& starts, InputType type,
                             int32_t dim) {
  BlockProblem p =
      Problem(bidirectional ? MaskKind::kDocumentsFull : MaskKind::kDocuments, 0, 8, 4);
  p.type = type;
  p.dim = dim;
  p.scale = 1.0f / std::sqrt(static_cast<float>(dim));
  p.mask.host_doc_starts = starts.data();
  p.mask.num_docs = static_cast<int32_t>(starts.size());
  return p;
}

// As WindowBlockValidates, for a document block (docs, or docs-full when bidirectional):
// forward and backward, bf16 and fp16, head dims 64 and 128, `pieces` pieces each time.
::testing::AssertionResult DocumentBlockValidates(const std::vector<int64_t>& qp,
                                                  const std::vector<int64_t>& kp,
                                                  bool bidirectional,
                                                  const std::vector<int64_t>& starts,
                                                  int32_t pieces) {
  return BlockValidatesEverywhere(
      qp, kp,
      [&](InputType type, int32_t dim) {
        return DocumentProblem(bidirectional, starts, type, dim);
      },
      bidirectional ? "docs-full " : "docs ", pieces);
}

TEST(CudnnGraphs, DocumentDiagonalAndOffDiagonalBlocksValidate) {
  SKIP_WITHOUT_CUDNN();
  // Tokens 0..255 against themselves, documents from 0, 100 and 180: a top-left triangle (docs)
  // or a full square (docs-full) per document, 100, 80 and 76 rows: 3 pieces.
  const std::vector<int64_t> three{0, 100, 180};
  EXPECT_TRUE(DocumentBlockValidates(Range(0, 256), Range(0, 256), false, three, 3));
  EXPECT_TRUE(DocumentBlockValidates(Range(0, 256), Range(0, 256), true, three, 3));
  // Queries 256..511 against keys 0..255, documents from 0, 100 and 300: only document 1 holds
  // both, queries 256..299 (rows 0..43) and keys 100..255 (rows 100..255), every key before
  // every query: one full 44 x 156 rectangle under either kind.
  const std::vector<int64_t> across{0, 100, 300};
  EXPECT_TRUE(DocumentBlockValidates(Range(256, 256), Range(0, 256), false, across, 1));
  EXPECT_TRUE(DocumentBlockValidates(Range(256, 256), Range(0, 256), true, across, 1));
  // One document longer than the block (documents from 0 and 4096): the causal diagonal block.
  const std::vector<int64_t> long_doc{0, 4096};
  EXPECT_TRUE(DocumentBlockValidates(Range(1024, 256), Range(1024, 256), false, long_doc, 1));
}

TEST(CudnnGraphs, DocumentZigzagAndStripedBlocksValidate) {
  SKIP_WITHOUT_CUDNN();
  // Zigzag shards of 4 ranks, 8 chunks of 64 tokens: rank 2 holds 128..191 and 320..383 (rows
  // 0..63, 64..127), rank 1 64..127 and 384..447. Documents from 0, 150 and 350: rank 2's rows
  // are cut at 150 (row 22) and 350 (row 94).
  const std::vector<int64_t> starts{0, 150, 350};
  std::vector<int64_t> r2 = Range(128, 64), r1 = Range(64, 64);
  const auto c5 = Range(320, 64), c6 = Range(384, 64);
  r2.insert(r2.end(), c5.begin(), c5.end());
  r1.insert(r1.end(), c6.begin(), c6.end());
  // Rank 2 against rank 1, docs: queries 128..149 see all of keys 64..127 (document 0, full
  // 22 x 64); queries 350..383 and keys 384..447 share document 2 but the keys come later:
  // 1 piece. docs-full: that second pair is a full 34 x 64 rectangle too: 2 pieces.
  EXPECT_TRUE(DocumentBlockValidates(r2, r1, false, starts, 1));
  EXPECT_TRUE(DocumentBlockValidates(r2, r1, true, starts, 2));
  // Rank 2 against itself, docs: document 0 a 22-row triangle; document 1 a 42-row triangle
  // (150..191), 320..349 against 150..191 full and against themselves a 30-row triangle;
  // document 2 a 34-row triangle: 5 pieces. docs-full: document 1's query runs each see key rows
  // 22..93 as one rectangle: 4 pieces.
  EXPECT_TRUE(DocumentBlockValidates(r2, r2, false, starts, 5));
  EXPECT_TRUE(DocumentBlockValidates(r2, r2, true, starts, 4));
  // Striped shards of 8 ranks, 128 rows each (1024 tokens), documents from 0 and 512: rank 3's
  // rows 3 + 8i and rank 5's 5 + 8j are cut at row 64 (507 < 512 < 515). In each document key
  // j (from the document's first row) is visible to query i iff j <= i - 1: a 63-row top-left
  // triangle from the document's second query row, 2 pieces; docs-full a 64 x 64 square each.
  std::vector<int64_t> s3, s5;
  for (int64_t i = 0; i < 128; ++i) {
    s3.push_back(3 + 8 * i);
    s5.push_back(5 + 8 * i);
  }
  const std::vector<int64_t> half{0, 512};
  EXPECT_TRUE(DocumentBlockValidates(s3, s5, false, half, 2));
  EXPECT_TRUE(DocumentBlockValidates(s3, s5, true, half, 2));
}

TEST(CudnnGraphs, DocumentBlocksCudnnCannotTakeAreRefused) {
  SKIP_WITHOUT_CUDNN();
  // Tokens 0..63 against themselves, documents from 0, 1, 2 and 32: tokens 0 and 1 are documents
  // of one token (1 x 1 pieces), then 30- and 32-row triangles: 4 pieces. The forward graphs
  // validate; cuDNN's backward refuses s_q = s_kv = 1 (cudnn_attention.cc), so the backward
  // block is refused (the own kernels' block).
  const std::vector<int64_t> ones{0, 1, 2, 32};
  const auto pos = Range(0, 64);
  const TensorView q = View(pos, 0, 8), k = View(pos, 0, 2);
  auto fwd = ValidateCudnnBlockOnHost(DocumentProblem(false, ones, InputType::kBf16, 128), q, k,
                                      nullptr, false);
  ASSERT_TRUE(fwd.ok()) << fwd.status().message();
  EXPECT_EQ(*fwd, 4);
  auto bwd =
      ValidateCudnnBlockOnHost(DocumentProblem(false, ones, InputType::kBf16, 128), q, k, &q, true);
  ASSERT_FALSE(bwd.ok());
  EXPECT_NE(bwd.status().message().find("cuDNN graph of a piece"), std::string::npos)
      << bwd.status().message();
  // Tokens 0..255 in 32 documents of 8: 32 pieces, past the 16 a block may take.
  std::vector<int64_t> many;
  for (int64_t t = 0; t < 256; t += 8) many.push_back(t);
  const auto all = Range(0, 256);
  for (bool bidirectional : {false, true}) {
    auto got = ValidateCudnnBlockOnHost(DocumentProblem(bidirectional, many, InputType::kBf16, 128),
                                        View(all, 0, 8), View(all, 0, 2), nullptr, false);
    ASSERT_FALSE(got.ok());
    EXPECT_NE(got.status().message().find("cannot express"), std::string::npos)
        << got.status().message();
  }
}

// The whole sequence in zigzag order as Ulysses (or all-gather KV) holds it: ranks 0..ranks-1,
// rank r holding chunks r and 2 ranks - 1 - r of `chunk` tokens.
std::vector<int64_t> WholeZigzag(int64_t ranks, int64_t chunk) {
  std::vector<int64_t> v;
  for (int64_t r = 0; r < ranks; ++r) {
    for (int64_t c : {r, 2 * ranks - 1 - r}) {
      const auto part = Range(c * chunk, chunk);
      v.insert(v.end(), part.begin(), part.end());
    }
  }
  return v;
}

TEST(CudnnGraphs, AWholeZigzagSequenceIsGatheredIntoFewPiecesThatValidate) {
  SKIP_WITHOUT_CUDNN();
  // 8 ranks, 16 chunks of 64 tokens (1024). As the rows lie, a causal mask needs a piece per
  // visible pair of chunks (136, past 16); gathered into position order (attention_pieces.h,
  // SplitInPositionOrder) it is one top-left triangle over all 1024 rows. The graphs see the
  // gathered buffers: query heads 4..7 of the view's 8 and their one KV head (group 4), dense.
  const auto whole = WholeZigzag(8, 64);
  const TensorView q = View(whole, 0, 8), k = View(whole, 0, 2);
  const BlockProblem causal = Problem(MaskKind::kCausal, 4, 4, 4);
  auto fwd = ValidateCudnnBlockOnHost(causal, q, k, nullptr, false);
  ASSERT_TRUE(fwd.ok()) << fwd.status().message();
  EXPECT_EQ(*fwd, 1);
  auto bwd = ValidateCudnnBlockOnHost(causal, q, k, &q, true);
  ASSERT_TRUE(bwd.ok()) << bwd.status().message();
  EXPECT_EQ(*bwd, 1);
  // A window of 100 tokens over the gathered sequence: row i sees keys max(0, i - 99)..i, one
  // top-left band of width 100 (the piece's left edge clips its first rows): 1 piece.
  BlockProblem window = Problem(MaskKind::kWindow, 4, 4, 4);
  window.mask.params.window = 100;
  auto w = ValidateCudnnBlockOnHost(window, q, k, &q, true);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(*w, 1);
  // Documents from 0, 300 and 700: a triangle each.
  const std::vector<int64_t> starts{0, 300, 700};
  EXPECT_TRUE(DocumentBlockValidates(whole, whole, false, starts, 3));
  // Striped, the whole sequence sorted is a run per row (1024, past the 64 runs a gather may
  // take): refused, the own kernels' block.
  std::vector<int64_t> striped;
  for (int64_t r = 0; r < 8; ++r) {
    for (int64_t i = 0; i < 128; ++i) striped.push_back(r + 8 * i);
  }
  auto s =
      ValidateCudnnBlockOnHost(causal, View(striped, 0, 8), View(striped, 0, 2), nullptr, false);
  EXPECT_FALSE(s.ok());
}

}  // namespace
}  // namespace meshplan::exec::cuda
#endif  // MESHPLAN_HAVE_CUDA
