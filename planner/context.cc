#include "planner/context.h"

#include <algorithm>

#include "planner/compute_model.h"

namespace meshplan::planner {

ShardBytes ComputeShardBytes(const Workload& w, int64_t num_ranks) {
  ShardBytes s;
  const double tokens = static_cast<double>(w.batch) * static_cast<double>(w.seq_len) /
                        static_cast<double>(num_ranks);
  const double x = tokens * static_cast<double>(w.head_dim) * BytesPerElement(w.dtype);
  const double partial_scale =
      static_cast<double>(BytesPerElement(w.partial_dtype)) / BytesPerElement(w.dtype);
  s.q = static_cast<double>(w.q_heads) * x;
  s.kv = 2.0 * static_cast<double>(w.kv_heads) * x;
  s.o_partial = s.q * partial_scale;
  s.lse = tokens * static_cast<double>(w.q_heads) * 4.0;
  s.dq_partial = s.q * partial_scale;
  s.dkv_partial = s.kv * partial_scale;
  return s;
}

ShardLayout PlanContext::LayoutFor(Layout kind, int64_t shards, int64_t subdivide) const {
  if (kind == Layout::kDocZigzag) {
    ShardLayout layout{kind, workload.seq_len, shards, subdivide};
    if (workload.mask.IsDocuments()) {
      if (documents_ == nullptr)
        documents_ = std::make_shared<const std::vector<int64_t>>(workload.mask.document_lengths);
      AttachDocuments(&layout, documents_);
    }
    return layout;
  }
  if (kind != Layout::kBalanced) return ShardLayout{kind, workload.seq_len, shards, subdivide};
  auto it = balanced_cache_.find(shards);
  if (it == balanced_cache_.end()) {
    // The chunks do not depend on subdivide, which only has to divide each chunk.
    it = balanced_cache_.emplace(shards, MakeShardLayout(kind, counter, shards, 1).balanced).first;
  }
  ShardLayout layout{kind, workload.seq_len, shards, subdivide};
  if (it->second != nullptr && it->second->chunk_tokens % subdivide == 0)
    layout.balanced = it->second;
  return layout;
}

const std::vector<int64_t>& PlanContext::RowPairsFor(const ShardLayout& layout) const {
  WorkKey key{static_cast<int>(layout.kind), layout.num_shards, 0};
  auto it = work_cache_.find(key);
  if (it == work_cache_.end()) it = work_cache_.emplace(key, RowPairs(layout, counter)).first;
  return it->second;
}

const std::vector<int64_t>& PlanContext::TilePairsFor(const ShardLayout& layout, int64_t a) const {
  WorkKey key{static_cast<int>(layout.kind), layout.num_shards, a};
  auto it = work_cache_.find(key);
  if (it == work_cache_.end()) it = work_cache_.emplace(key, TilePairs(layout, counter, a)).first;
  return it->second;
}

const std::vector<int64_t>& PlanContext::TileCutRowsFor(const ShardLayout& layout,
                                                        int64_t a) const {
  WorkKey key{static_cast<int>(layout.kind), layout.num_shards, a};
  auto it = cut_rows_cache_.find(key);
  if (it == cut_rows_cache_.end())
    it = cut_rows_cache_.emplace(key, TileCutRows(layout, counter, a)).first;
  return it->second;
}

const std::vector<int64_t>& PlanContext::TileMergedBlocksFor(const ShardLayout& layout,
                                                             int64_t a) const {
  WorkKey key{static_cast<int>(layout.kind), layout.num_shards, a};
  auto it = merged_blocks_cache_.find(key);
  if (it == merged_blocks_cache_.end()) {
    std::optional<std::vector<int64_t>> merged = TileMergedBlocksClosedForm(layout, counter, a);
    if (!merged) {
      // The KV shards each Q shard meets with pairs do not depend on the tile: found once per
      // layout, for every tile shape a scheme tries on it.
      WorkKey layout_key{static_cast<int>(layout.kind), layout.num_shards, 0};
      auto intervals = nonempty_cache_.find(layout_key);
      if (intervals == nonempty_cache_.end()) {
        intervals = nonempty_cache_.emplace(layout_key, NonemptyKvShards(layout, counter)).first;
      }
      merged = TileMergedBlocksFrom(intervals->second, a);
    }
    it = merged_blocks_cache_.emplace(key, *std::move(merged)).first;
  }
  return it->second;
}

double PlanContext::BusiestRankMerges(const ShardLayout& layout, int64_t a, double kernel_s,
                                      double merge_s) const {
  const std::vector<int64_t>& merges = TileMergedBlocksFor(layout, a);
  const std::vector<int64_t>& pairs = a == 1 ? RowPairsFor(layout) : TilePairsFor(layout, a);
  const double w = CutRowExtraPairs(topology.gpu, layout);
  const std::vector<int64_t>* cut_rows = w > 0 ? &TileCutRowsFor(layout, a) : nullptr;
  auto work = [&](size_t g) {
    return static_cast<double>(pairs[g]) + (cut_rows != nullptr && g < cut_rows->size()
                                                ? w * static_cast<double>((*cut_rows)[g])
                                                : 0.0);
  };
  double max_work = 0;
  for (size_t g = 0; g < pairs.size(); ++g) max_work = std::max(max_work, work(g));
  double most = 0;
  for (size_t g = 0; g < merges.size() && g < pairs.size(); ++g) {
    const double lighter_s = max_work > 0 ? (1.0 - work(g) / max_work) * kernel_s : 0.0;
    most = std::max(most, static_cast<double>(merges[g]) - lighter_s / merge_s);
  }
  return most;
}

double PlanContext::KernelForwardFlopsMax(const std::vector<int64_t>& pairs,
                                          const ShardLayout& layout, int64_t a,
                                          int64_t heads) const {
  const double w = CutRowExtraPairs(topology.gpu, layout);
  double max_work = 0;
  if (w > 0) {
    const std::vector<int64_t>& cut_rows = TileCutRowsFor(layout, a);
    for (size_t g = 0; g < pairs.size() && g < cut_rows.size(); ++g) {
      max_work =
          std::max(max_work, static_cast<double>(pairs[g]) + w * static_cast<double>(cut_rows[g]));
    }
  } else {
    for (int64_t p : pairs) max_work = std::max(max_work, static_cast<double>(p));
  }
  return ForwardFlops(1, heads) * max_work;
}

KernelShape PlanContext::ShapeOf(const ShardLayout& layout, int64_t heads,
                                 KernelCalls calls) const {
  const int64_t batch_heads = workload.batch * heads;
  if (!DocumentTilesModelled(topology.gpu, layout))
    return {layout.KernelBlockTokens(), batch_heads};
  const ShapeKey key{static_cast<int>(layout.kind), layout.num_shards, static_cast<int>(calls)};
  auto it = shape_cache_.find(key);
  if (it == shape_cache_.end())
    it = shape_cache_
             .emplace(key, MakeKernelShape(topology.gpu, layout, 0, workload.mask.kind, calls))
             .first;
  KernelShape shape = it->second;
  shape.batch_heads = batch_heads;
  return shape;
}

}  // namespace meshplan::planner
