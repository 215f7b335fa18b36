// Per-rank work of the 1-D and 2-D assignments against token-by-token brute force.
#include "planner/compute_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace meshplan::planner {
namespace {

// Independent definitions (not the library's) of the mask and of the layouts' token sets.
bool Visible(const Mask& m, const std::vector<int64_t>& doc_of, int64_t q, int64_t k) {
  switch (m.kind) {
    case MaskKind::kFull:
      return true;
    case MaskKind::kCausal:
      return k <= q;
    case MaskKind::kWindow:
      return k <= q && q - k < m.window;
    case MaskKind::kDocuments:
      return k <= q && doc_of[q] == doc_of[k];
    case MaskKind::kDocumentsFull:
      return doc_of[q] == doc_of[k];
    case MaskKind::kPrefix:
      return k < m.prefix || k <= q;
  }
  return false;
}

// The balanced layout's chunks are an input here (their choice is tested in
// tests/core/sequence/balanced_dispatch_test.cc): owner of token t = the owner of its chunk.
std::vector<int64_t> Tokens(const ShardLayout& sl, int64_t shard) {
  const Layout layout = sl.kind;
  const int64_t seq = sl.seq_len, shards = sl.num_shards;
  std::vector<int64_t> out;
  for (int64_t t = 0; t < seq; ++t) {
    int64_t owner;
    if (layout == Layout::kDocZigzag) {
      // Chunk x of its document's 2N (TransformerEngine's THD split): shard x, or 2N - 1 - x.
      int64_t start = 0, length = 0;
      for (int64_t l : *sl.documents) {
        if (t < start + l) {
          length = l;
          break;
        }
        start += l;
      }
      const int64_t chunk = (t - start) / (length / (2 * shards));
      owner = chunk < shards ? chunk : 2 * shards - 1 - chunk;
    } else if (layout == Layout::kBalanced) {
      owner = sl.balanced->owner[t / sl.balanced->chunk_tokens];
    } else if (layout == Layout::kContiguous) {
      owner = t / (seq / shards);
    } else if (layout == Layout::kStriped) {
      owner = t % shards;
    } else {
      const int64_t chunk = t / (seq / (2 * shards));
      owner = chunk < shards ? chunk : 2 * shards - 1 - chunk;
    }
    if (owner == shard) out.push_back(t);
  }
  return out;
}

int64_t BrutePairs(const Mask& m, const std::vector<int64_t>& doc_of,
                   const std::vector<int64_t>& qs, const std::vector<int64_t>& ks) {
  int64_t n = 0;
  for (int64_t q : qs) {
    for (int64_t k : ks) n += Visible(m, doc_of, q, k) ? 1 : 0;
  }
  return n;
}

struct MaskCase {
  Mask mask;
  std::vector<Layout> layouts;
};

std::vector<MaskCase> Cases() {
  Mask docs = Mask::Documents({5, 40, 3, 17, 31});  // uneven lengths summing to 96
  return {{Mask::Full(), {Layout::kContiguous, Layout::kZigzag, Layout::kStriped}},
          {Mask::Causal(), {Layout::kContiguous, Layout::kZigzag, Layout::kStriped}},
          {Mask::Window(7), {Layout::kContiguous, Layout::kZigzag}},
          {Mask::Window(50), {Layout::kContiguous, Layout::kZigzag}},
          {docs, {Layout::kContiguous, Layout::kZigzag, Layout::kBalanced}},
          {Mask::Documents({5, 40, 3, 17, 31}, true),
           {Layout::kContiguous, Layout::kZigzag, Layout::kBalanced}},
          // Each document zigzagged on its own (multiples of 2N for N = 1, 2, 3, 4, 6 and 12).
          {Mask::Documents({24, 48, 24}), {Layout::kDocZigzag, Layout::kZigzag}},
          {Mask::Documents({24, 48, 24}, true), {Layout::kDocZigzag}},
          // The balanced layout with a causal mask takes the enumerating path, not the closed form.
          {Mask::Causal(), {Layout::kBalanced}},
          // Prefixes ending inside a zigzag chunk and past the middle (keys of later chunks seen).
          {Mask::Prefix(13), {Layout::kContiguous, Layout::kZigzag}},
          {Mask::Prefix(70), {Layout::kContiguous, Layout::kZigzag}}};
}

std::vector<int64_t> DocOf(const Mask& m, int64_t seq) {
  std::vector<int64_t> doc_of(seq, 0);
  if (!m.IsDocuments()) return doc_of;
  int64_t t = 0;
  for (size_t d = 0; d < m.document_lengths.size(); ++d) {
    for (int64_t i = 0; i < m.document_lengths[d]; ++i) doc_of[t++] = static_cast<int64_t>(d);
  }
  return doc_of;
}

TEST(ComputeModel, RowPairsMatchBruteForce) {
  const int64_t seq = 96;
  for (const MaskCase& c : Cases()) {
    const PairCounter counter(c.mask, seq);
    const auto doc_of = DocOf(c.mask, seq);
    std::vector<int64_t> all(seq);
    for (int64_t t = 0; t < seq; ++t) all[t] = t;
    for (Layout layout : c.layouts) {
      for (int64_t shards : {1, 2, 3, 4, 6}) {
        const ShardLayout sl = MakeShardLayout(layout, counter, shards, 1);
        if (!sl.Validate(c.mask).ok()) continue;  // balanced: 4 chunks per shard must divide 96
        const auto rows = RowPairs(sl, counter);
        for (int64_t i = 0; i < shards; ++i) {
          EXPECT_EQ(rows[i], BrutePairs(c.mask, doc_of, Tokens(sl, i), all))
              << c.mask.ToString() << " " << LayoutName(layout) << " N=" << shards << " shard "
              << i;
        }
      }
    }
  }
}

TEST(ComputeModel, TilePairsMatchBruteForce) {
  const int64_t seq = 96;
  for (const MaskCase& c : Cases()) {
    const PairCounter counter(c.mask, seq);
    const auto doc_of = DocOf(c.mask, seq);
    for (Layout layout : c.layouts) {
      for (auto [n, a] : std::vector<std::pair<int64_t, int64_t>>{{4, 2},
                                                                  {6, 2},
                                                                  {6, 3},
                                                                  {6, 1},
                                                                  {6, 6},
                                                                  {8, 4},
                                                                  {8, 8},
                                                                  {8, 1},
                                                                  {12, 3},
                                                                  {12, 4},
                                                                  {12, 12}}) {
        if (seq % (2 * n) != 0) continue;
        const ShardLayout sl = MakeShardLayout(layout, counter, n, 1);
        if (!sl.Validate(c.mask).ok()) continue;
        const auto tile = TilePairs(sl, counter, a);
        for (int64_t g = 0; g < n; ++g) {
          // Rank g's tile: Q shards a*floor(g/a) .. +a-1, KV shards j with j = g (mod a).
          std::vector<int64_t> qs, ks;
          for (int64_t i = a * (g / a); i < a * (g / a) + a; ++i) {
            for (int64_t t : Tokens(sl, i)) qs.push_back(t);
          }
          for (int64_t j = g % a; j < n; j += a) {
            for (int64_t t : Tokens(sl, j)) ks.push_back(t);
          }
          EXPECT_EQ(tile[g], BrutePairs(c.mask, doc_of, qs, ks))
              << c.mask.ToString() << " " << LayoutName(layout) << " n=" << n << " a=" << a
              << " rank " << g;
        }
      }
    }
  }
}

// Cut rows of one block by the definition (core/sequence/layout.h BlockWork), token by token: the
// block's pieces are its shards' runs of consecutive tokens split at chunk boundaries (a striped
// shard is one piece), and a query row of a q piece is cut by a k piece when it sees some but not
// all of it.
std::vector<std::vector<int64_t>> Pieces(const ShardLayout& sl, int64_t shard) {
  const std::vector<int64_t> tokens = Tokens(sl, shard);
  if (sl.kind == Layout::kStriped) return {tokens};
  const int64_t chunk = sl.seq_len / (sl.RangesPerShard() * sl.num_shards);
  // Doc-zigzag's chunks start at each document's start plus multiples of its length / 2N.
  std::vector<char> chunk_start(static_cast<size_t>(sl.seq_len), 0);
  if (sl.kind == Layout::kDocZigzag) {
    int64_t start = 0;
    for (int64_t length : *sl.documents) {
      for (int64_t t = start; t < start + length; t += length / (2 * sl.num_shards))
        chunk_start[static_cast<size_t>(t)] = 1;
      start += length;
    }
  } else {
    for (int64_t t = 0; t < sl.seq_len; t += chunk) chunk_start[static_cast<size_t>(t)] = 1;
  }
  std::vector<std::vector<int64_t>> out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (i == 0 || tokens[i] != tokens[i - 1] + 1 || chunk_start[static_cast<size_t>(tokens[i])])
      out.emplace_back();
    out.back().push_back(tokens[i]);
  }
  return out;
}

int64_t BruteCutRows(const Mask& m, const std::vector<int64_t>& doc_of, const ShardLayout& sl,
                     int64_t q_shard, int64_t kv_shard) {
  int64_t cut = 0;
  for (const auto& qp : Pieces(sl, q_shard)) {
    for (const auto& kp : Pieces(sl, kv_shard)) {
      for (int64_t q : qp) {
        const int64_t seen = BrutePairs(m, doc_of, {q}, kp);
        cut += (seen > 0 && seen < static_cast<int64_t>(kp.size())) ? 1 : 0;
      }
    }
  }
  return cut;
}

TEST(ComputeModel, TileCutRowsMatchBruteForce) {
  const int64_t seq = 96;
  for (const MaskCase& c : Cases()) {
    const PairCounter counter(c.mask, seq);
    const auto doc_of = DocOf(c.mask, seq);
    for (Layout layout : c.layouts) {
      for (auto [n, a] : std::vector<std::pair<int64_t, int64_t>>{
               {1, 1}, {4, 1}, {4, 2}, {6, 1}, {6, 3}, {8, 4}, {8, 8}, {12, 3}, {12, 12}}) {
        if (seq % (2 * n) != 0) continue;
        const ShardLayout sl = MakeShardLayout(layout, counter, n, 1);
        if (!sl.Validate(c.mask).ok()) continue;
        const auto cut = TileCutRows(sl, counter, a);
        for (int64_t g = 0; g < n; ++g) {
          int64_t expected = 0;  // rank g's blocks: Q shards a*floor(g/a) + .., KV shards = g mod a
          for (int64_t i = a * (g / a); i < a * (g / a) + a; ++i) {
            for (int64_t j = g % a; j < n; j += a)
              expected += BruteCutRows(c.mask, doc_of, sl, i, j);
          }
          EXPECT_EQ(cut[g], expected) << c.mask.ToString() << " " << LayoutName(layout)
                                      << " n=" << n << " a=" << a << " rank " << g;
        }
      }
    }
  }
}

// A block merges its partials when it has pairs and its Q slot already computed one: the
// expansion skips blocks without pairs (sched::EmitCompute), so a rank's merges are its Q shards'
// blocks with pairs but the first of each.
TEST(ComputeModel, TileMergedBlocksMatchBruteForce) {
  const int64_t seq = 96;
  for (const MaskCase& c : Cases()) {
    const PairCounter counter(c.mask, seq);
    for (Layout layout : c.layouts) {
      for (auto [n, a] : std::vector<std::pair<int64_t, int64_t>>{
               {1, 1}, {4, 1}, {4, 2}, {6, 1}, {6, 3}, {8, 4}, {8, 8}, {12, 3}, {12, 12}}) {
        if (seq % (2 * n) != 0) continue;
        const ShardLayout sl = MakeShardLayout(layout, counter, n, 1);
        if (!sl.Validate(c.mask).ok()) continue;
        const auto merges = TileMergedBlocks(sl, counter, a);
        for (int64_t g = 0; g < n; ++g) {
          int64_t expected = 0;
          for (int64_t i = a * (g / a); i < a * (g / a) + a; ++i) {
            int64_t with_pairs = 0;
            for (int64_t j = g % a; j < n; j += a) with_pairs += sl.BlockPairs(counter, i, j) > 0;
            expected += std::max<int64_t>(0, with_pairs - 1);
          }
          EXPECT_EQ(merges[g], expected) << c.mask.ToString() << " " << LayoutName(layout)
                                         << " n=" << n << " a=" << a << " rank " << g;
        }
      }
    }
  }
}

TEST(ComputeModel, TileMergedBlocksByHand) {
  // 4 ranks of 8 tokens. Causal contiguous: rank i's Q sees KV shards 0..i, i merges. A window of
  // 4: its own shard and the one before (rank 0 has none before): 0, 1, 1, 1. Full: 3 each on a
  // ring; on 2 x 2 tiles (a = 2) a rank's 2 Q shards meet 2 KV shards each: 2 x (2 - 1).
  EXPECT_EQ(TileMergedBlocks({Layout::kContiguous, 32, 4, 1}, PairCounter(Mask::Causal(), 32), 1),
            (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(TileMergedBlocks({Layout::kContiguous, 32, 4, 1}, PairCounter(Mask::Window(4), 32), 1),
            (std::vector<int64_t>{0, 1, 1, 1}));
  EXPECT_EQ(TileMergedBlocks({Layout::kContiguous, 32, 4, 1}, PairCounter(Mask::Full(), 32), 1),
            (std::vector<int64_t>{3, 3, 3, 3}));
  EXPECT_EQ(TileMergedBlocks({Layout::kContiguous, 32, 4, 1}, PairCounter(Mask::Full(), 32), 2),
            (std::vector<int64_t>{2, 2, 2, 2}));
}

TEST(ComputeModel, TileCutRowsByHand) {
  // 16 causal tokens. Contiguous, 4 shards of 4: only a rank's own block is cut, rows 0..2 seeing
  // 1..3 of its 4 keys: 3 rows. Zigzag, 2 shards of two chunks of 4: its own block holds each
  // chunk against itself (3 cut rows each) and two chunk pairs wholly seen or hidden: 6. Striped,
  // 2 shards of 8: each of the 2 blocks a 1-D rank computes is cut on 7 of its 8 rows: 14.
  const PairCounter counter(Mask::Causal(), 16);
  EXPECT_EQ(TileCutRows({Layout::kContiguous, 16, 4, 1}, counter, 1),
            (std::vector<int64_t>{3, 3, 3, 3}));
  EXPECT_EQ(TileCutRows({Layout::kZigzag, 16, 2, 1}, counter, 1), (std::vector<int64_t>{6, 6}));
  EXPECT_EQ(TileCutRows({Layout::kStriped, 16, 2, 1}, counter, 1), (std::vector<int64_t>{14, 14}));
  // A full mask cuts nothing.
  EXPECT_EQ(TileCutRows({Layout::kContiguous, 16, 4, 1}, PairCounter(Mask::Full(), 16), 2),
            (std::vector<int64_t>{0, 0, 0, 0}));
}

TEST(ComputeModel, ZigzagCausalIsBalancedContiguousIsNot) {
  // 64 ranks at 1M tokens: zigzag gives every rank the same work; contiguous gives the last
  // rank about 2x the mean (ALGORITHMS.md: ~1.98x at P = 64).
  const int64_t seq = 1 << 20, ranks = 64;
  const PairCounter counter(Mask::Causal(), seq);
  for (int64_t a : {1, 8}) {
    const auto zig = TilePairs({Layout::kZigzag, seq, ranks, 1}, counter, a);
    const auto con = TilePairs({Layout::kContiguous, seq, ranks, 1}, counter, a);
    double zig_max = 0, zig_sum = 0, con_max = 0, con_sum = 0;
    for (int64_t g = 0; g < ranks; ++g) {
      zig_max = std::max<double>(zig_max, zig[g]);
      zig_sum += zig[g];
      con_max = std::max<double>(con_max, con[g]);
      con_sum += con[g];
    }
    EXPECT_NEAR(zig_max / (zig_sum / ranks), 1.0, 1e-3) << "a=" << a;
    if (a == 1) {
      EXPECT_NEAR(con_max / (con_sum / ranks), 1.98, 0.01);
    }
  }
}

TEST(ComputeModel, KernelSecondsIsFlopsOverRatePlusLaunches) {
  GpuSpec gpu;
  gpu.peak_tflops = {{DType::kBf16, 1000}};
  gpu.attention_efficiency = {{1024, 0.25}, {4096, 0.75}};
  gpu.launch_overhead_s = 5e-6;
  // 2048 tokens is halfway between 1024 and 4096 in log2: efficiency 0.5, rate 500 TFLOP/s.
  EXPECT_NEAR(KernelSeconds(gpu, DType::kBf16, 128, 1e12, KernelShape{2048, 0}, 3),
              1e12 / 500e12 + 3 * 5e-6, 1e-12);
}

}  // namespace
}  // namespace meshplan::planner

namespace meshplan::planner {
namespace {

TEST(ComputeModel, KernelSecondsOfRanksSharingADeviceGrowsByRanksOverSlots) {
  // 500 TFLOP/s alone (1000 peak x 0.5), 1 TFLOP: 2 ms alone. 8 ranks on a device that runs 2
  // kernels at full rate, all busy: each kernel gets 2/8 of the rate, so 8 ms. Fewer ranks than
  // slots never speed a kernel up.
  GpuSpec gpu;
  gpu.peak_tflops = {{DType::kBf16, 1000}};
  gpu.attention_efficiency = {{1, 0.5}};
  EXPECT_NEAR(UnsharedKernelSeconds(gpu, DType::kBf16, 128, 1e12, KernelShape{2048, 0}, 0), 2e-3,
              1e-12);
  gpu.ranks_per_device = 8;
  gpu.concurrent_kernels = 2;
  EXPECT_NEAR(KernelSeconds(gpu, DType::kBf16, 128, 1e12, KernelShape{2048, 0}, 0), 8e-3, 1e-12);
  EXPECT_NEAR(UnsharedKernelSeconds(gpu, DType::kBf16, 128, 1e12, KernelShape{2048, 0}, 0), 2e-3,
              1e-12);
  gpu.ranks_per_device = 2;
  gpu.concurrent_kernels = 4;
  EXPECT_NEAR(KernelSeconds(gpu, DType::kBf16, 128, 1e12, KernelShape{2048, 0}, 0), 2e-3, 1e-12);
}

}  // namespace
}  // namespace meshplan::planner
