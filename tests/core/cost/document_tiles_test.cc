// Packed documents round up to whole tiles (core/cost/document_tiles.h): tile counts and fills
// derived by hand below, from the tile shapes alone.
#include "core/cost/document_tiles.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/cluster/topology_toml.h"
#include "core/cost/kernel_time.h"

namespace meshplan {
namespace {

// FlashAttention-3's d = 128 tiles (topologies/gpus/h100-sxm5.toml): forward 128 query rows x 176
// keys (128 keys in a causal call), backward 128 key rows x 80 query rows (64 causal).
GpuSpec Fa3Gpu() {
  GpuSpec gpu;
  gpu.sm_count = 132;
  gpu.occupancy.forward_tile_rows = 128;
  gpu.occupancy.backward_tile_rows = 128;
  gpu.occupancy.forward_tile_keys = 176;
  gpu.occupancy.forward_causal_tile_keys = 128;
  gpu.occupancy.backward_tile_queries = 80;
  gpu.occupancy.backward_causal_tile_queries = 64;
  gpu.cut_row_extra_pairs = 120;
  return gpu;
}

ShardLayout DocZigzagShards(std::vector<int64_t> documents, int64_t shards) {
  int64_t seq = 0;
  for (int64_t d : documents) seq += d;
  ShardLayout layout{Layout::kDocZigzag, seq, shards, 1};
  AttachDocuments(&layout, std::make_shared<const std::vector<int64_t>>(std::move(documents)));
  return layout;
}

TEST(DenseTiles, EverySideRoundsUp) {
  // 300 rows / 128 -> 3 tiles, 100 keys / 64 -> 2: 6.
  EXPECT_EQ(DenseTiles(300, 100, {128, 64}), 6);
  // Exact multiples: 256 / 128 x 352 / 176 = 2 x 2.
  EXPECT_EQ(DenseTiles(256, 352, {128, 176}), 4);
  // A document of 5 tokens still costs a whole tile.
  EXPECT_EQ(DenseTiles(5, 5, {128, 176}), 1);
  EXPECT_EQ(DenseTiles(0, 5, {128, 176}), 0);
  EXPECT_EQ(DenseTiles(5, 5, {0, 176}), 0);
}

TEST(CausalTiles, TilesHoldingAVisiblePair) {
  // A causal square of two 128-tiles a side: tile row 0 reaches key 127 (1 tile), row 1 key 255
  // (2): 3 of the 4.
  EXPECT_EQ(CausalTiles(256, 256, {128, 128}), 3);
  // 1024 x 1024 in 128-tiles: 1 + 2 + ... + 8 = 36.
  EXPECT_EQ(CausalTiles(1024, 1024, {128, 128}), 36);
  // Bottom-right: 100 rows that are the last of 300 keys, one query tile reaching key 299:
  // ceil(300 / 128) = 3.
  EXPECT_EQ(CausalTiles(100, 300, {128, 128}), 3);
  // Tiles that are not square: 200 x 200 in 128 x 176: row 0 reaches key 127 (ceil(128 / 176) =
  // 1), row 1 key 199 (ceil(200 / 176) = 2): 3.
  EXPECT_EQ(CausalTiles(200, 200, {128, 176}), 3);
  EXPECT_EQ(CausalTiles(0, 10, {128, 128}), 0);
}

TEST(DocumentTileFill, RingBlocksOnAShortDocumentByHand) {
  // One causal document of 8 tokens on 2 shards: chunks of c = 2, rank r holding chunks r and
  // 3 - r (4 tokens). Each rank's visible pairs, averaged: the diagonal 2c^2 + c = 10 and one
  // off-diagonal block 2c^2 = 8: 18 (the document's 36 pairs over 2 ranks).
  // Forward: the diagonal is one causal 4 x 4 call (1 tile of 128 x 128 = 16384 slots); the other
  // block, halved as TransformerEngine halves it, 4 x 2 or 2 x 4 (one each on average over the
  // ranks: (N - 1) / 2 = 0.5 of each), 1 dense tile of 128 x 176 = 22528 slots each:
  // 16384 + 0.5 x 2 x 22528 = 38912. Backward: 64 x 128 = 8192 and 80 x 128 = 10240: 18432.
  const TileFill fill =
      DocumentTileFill(Fa3Gpu(), DocZigzagShards({8}, 2), /*causal=*/true, KernelCalls::kBlocks);
  EXPECT_DOUBLE_EQ(fill.forward, 18.0 / 38912.0);
  EXPECT_DOUBLE_EQ(fill.backward, 18.0 / 18432.0);
}

TEST(DocumentTileFill, GatheredKeysOnAShortDocumentByHand) {
  // The same document, all-gather: rank 0's chunk 0 against keys [0, 2) and chunk 3 against
  // [0, 8); rank 1's chunk 1 against [0, 4) and chunk 2 against [0, 6). Visible (bottom-right
  // causal, m (n - m) + m (m + 1) / 2 with m = 2): 3 + 15 + 7 + 11 = 36, the whole document.
  // Four calls of one causal tile each: forward 4 x 16384, backward 4 x 8192.
  const TileFill fill = DocumentTileFill(Fa3Gpu(), DocZigzagShards({8}, 2), /*causal=*/true,
                                         KernelCalls::kGatheredKeys);
  EXPECT_DOUBLE_EQ(fill.forward, 36.0 / 65536.0);
  EXPECT_DOUBLE_EQ(fill.backward, 36.0 / 32768.0);
}

TEST(DocumentTileFill, BidirectionalDocumentsAreDenseCalls) {
  // One bidirectional document of 8 tokens on 2 shards, ring blocks: every block a dense 4 x 4
  // call (1 tile) of 4c^2 = 16 visible pairs, 2 blocks a rank: 32 / (2 x 22528) forward,
  // 32 / (2 x 10240) backward.
  const TileFill fill =
      DocumentTileFill(Fa3Gpu(), DocZigzagShards({8}, 2), /*causal=*/false, KernelCalls::kBlocks);
  EXPECT_DOUBLE_EQ(fill.forward, 32.0 / 45056.0);
  EXPECT_DOUBLE_EQ(fill.backward, 32.0 / 20480.0);
}

TEST(DocumentTileFill, LongDocumentsFillTheirTiles) {
  // One shard, a causal document of 1024 tokens (c = 512): one causal 1024 x 1024 call, 36 tiles
  // of 128 x 128 forward (CausalTiles above) for 1024 x 1025 / 2 = 524800 pairs: 0.89; the
  // backward's 64 x 128 tiles: key tile j (keys 128 j ..) is reached by query tiles from 2 j on,
  // 16 - 2j of them: 16 + 14 + ... + 2 = 72 tiles of 8192.
  const TileFill fill =
      DocumentTileFill(Fa3Gpu(), DocZigzagShards({1024}, 1), /*causal=*/true, KernelCalls::kBlocks);
  EXPECT_DOUBLE_EQ(fill.forward, 524800.0 / (36.0 * 16384.0));
  EXPECT_DOUBLE_EQ(fill.backward, 524800.0 / (72.0 * 8192.0));
}

TEST(DocumentTileFill, NothingModelledWithoutTilesOrDocuments) {
  GpuSpec no_keys = Fa3Gpu();
  no_keys.occupancy.forward_tile_keys = 0;
  const TileFill none =
      DocumentTileFill(no_keys, DocZigzagShards({8}, 2), true, KernelCalls::kBlocks);
  EXPECT_DOUBLE_EQ(none.forward, 1.0);
  EXPECT_DOUBLE_EQ(none.backward, 1.0);
  const ShardLayout contiguous{Layout::kContiguous, 1024, 2, 1};
  EXPECT_DOUBLE_EQ(DocumentTileFill(Fa3Gpu(), contiguous, true, KernelCalls::kBlocks).forward, 1.0);
  EXPECT_FALSE(DocumentTilesModelled(no_keys, DocZigzagShards({8}, 2)));
  EXPECT_TRUE(DocumentTilesModelled(Fa3Gpu(), DocZigzagShards({8}, 2)));
}

TEST(CutRowExtraPairs, TheTilesHoldTheDocumentsDiagonals) {
  EXPECT_DOUBLE_EQ(CutRowExtraPairs(Fa3Gpu(), DocZigzagShards({8}, 2)), 0.0);
  const ShardLayout zigzag{Layout::kZigzag, 1024, 2, 1};
  EXPECT_DOUBLE_EQ(CutRowExtraPairs(Fa3Gpu(), zigzag), 120.0);
  GpuSpec no_keys = Fa3Gpu();
  no_keys.occupancy.backward_tile_queries = 0;
  EXPECT_DOUBLE_EQ(CutRowExtraPairs(no_keys, DocZigzagShards({8}, 2)), 120.0);
}

TEST(KernelShape, TheFillScalesTheRateAndTheBackwardRatio) {
  GpuSpec gpu = Fa3Gpu();
  gpu.peak_tflops[DType::kBf16] = 1000;
  gpu.attention_efficiency = {{1024, 0.5}};
  gpu.backward_rate_ratio = 0.8;
  const ShardLayout layout = DocZigzagShards({8}, 2);
  const KernelShape shape =
      MakeKernelShape(gpu, layout, 0, MaskKind::kDocuments, KernelCalls::kBlocks);
  EXPECT_DOUBLE_EQ(shape.forward_tile_fill, 18.0 / 38912.0);
  // peak x efficiency x fill (occupancy 1: no batch x heads given).
  EXPECT_DOUBLE_EQ(AttentionFlopsPerSecond(gpu, DType::kBf16, 0, shape),
                   1e15 * 0.5 * 18.0 / 38912.0);
  // The backward's rate over the forward's moves by the fills' ratio: 0.8 x 38912 / 18432.
  EXPECT_DOUBLE_EQ(BackwardRateRatio(gpu, shape), 0.8 * (18.0 / 18432.0) / (18.0 / 38912.0));
  // A bidirectional document mask makes dense calls.
  EXPECT_DOUBLE_EQ(MakeKernelShape(gpu, layout, 0, MaskKind::kDocumentsFull, KernelCalls::kBlocks)
                       .forward_tile_fill,
                   32.0 / 45056.0);
}

TEST(DocumentTilesToml, TheCatalogStatesTheTilesAndAFileRoundTripsThem) {
  const std::string level =
      "[[level]]\nname = \"nvlink\"\nkind = \"switch\"\ngroup_size = 8\nbandwidth_GBps = 450\n"
      "latency_us = 1\n";
  // The shipped H100 entry: FlashAttention-3's tiles (hopper/tile_size.h, flash_bwd_launch_
  // template.h) and FlashAttention-2's (Flash_fwd_kernel_traits<128, 128, 64, 4>,
  // Flash_bwd_kernel_traits<128, 64, 128, 8, ...>).
  auto h100 = ParseTopologyToml("name = \"x\"\ngpu = \"h100-sxm5\"\n" + level, "x.toml");
  ASSERT_TRUE(h100.ok()) << h100.status().message();
  const KernelOccupancy& fa3 = h100->gpu.attention_kernels.at("fa3").occupancy;
  EXPECT_EQ(fa3.forward_tile_keys, 176);
  EXPECT_EQ(fa3.forward_causal_tile_keys, 128);
  EXPECT_EQ(fa3.backward_tile_queries, 80);
  EXPECT_EQ(fa3.backward_causal_tile_queries, 64);
  const KernelOccupancy& fa2 = h100->gpu.attention_kernels.at("fa2").occupancy;
  EXPECT_EQ(fa2.forward_tile_keys, 64);
  EXPECT_EQ(fa2.backward_tile_queries, 64);
  EXPECT_EQ(fa2.forward_causal_tile_keys, 0);
  // Written out and read back, the keys survive.
  auto again = ParseTopologyToml(TopologyToToml(*h100), "again.toml");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->gpu.attention_kernels.at("fa3").occupancy, fa3);
  EXPECT_EQ(again->gpu.attention_kernels.at("fa2").occupancy, fa2);
  // A value out of range names its key (in a table of a library not in use: the one in use is
  // checked as the [gpu] fields it is copied into).
  auto bad = ParseTopologyToml(
      "name = \"x\"\n[gpu]\ncatalog = \"h100-sxm5\"\n[gpu.attention_kernels.fa2]\n"
      "occupancy = { backward_causal_tile_queries = -1 }\n" +
          level,
      "x.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "x.toml: gpu.attention_kernels.fa2.occupancy.backward_causal_tile_queries: must be in "
            "0..65536 (0: not stated)");
}

}  // namespace
}  // namespace meshplan
