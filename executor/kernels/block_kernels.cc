#include "executor/kernels/block_kernels.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>

namespace meshplan::exec {
namespace {

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstView = Eigen::Map<const RowMajor, 0, Eigen::OuterStride<>>;
using View = Eigen::Map<RowMajor, 0, Eigen::OuterStride<>>;
using Dense = Eigen::Map<RowMajor>;  // contiguous scratch matrix

ConstView Map(const RowsView& r, int64_t d) {
  return ConstView(r.data, r.rows, d, Eigen::OuterStride<>(r.stride));
}
View Map(MutableRows r, int64_t d) {
  return View(r.data, r.rows, d, Eigen::OuterStride<>(r.stride));
}

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// How much of a block the mask leaves visible, decided from the position ranges alone.
enum class Visibility { kNone, kAll, kPartial };

// Smallest and largest token position of some rows.
struct PositionRange {
  int64_t lo = 0, hi = 0;
};

PositionRange RangeOf(const int64_t* positions, int64_t n) {
  const auto [lo, hi] = std::minmax_element(positions, positions + n);
  return {*lo, *hi};
}

// Visibility of every pair (query in `q`, key in `k`) from the position ranges: kNone and kAll
// are exact claims, kPartial means "check each pair". Rows of a block need not be contiguous
// positions (zigzag, striped), so the ranges are conservative there: kPartial then.
Visibility Classify(PositionRange q, PositionRange k, const MaskRule& mask) {
  if (mask.NoneVisible(q.lo, q.hi, k.lo, k.hi)) return Visibility::kNone;
  if (mask.AllVisible(q.lo, q.hi, k.lo, k.hi)) return Visibility::kAll;
  return Visibility::kPartial;
}

Visibility Classify(const RowsView& q, const RowsView& k, const MaskRule& mask) {
  if (mask.full()) return Visibility::kAll;
  return Classify(RangeOf(q.positions, q.rows), RangeOf(k.positions, k.rows), mask);
}

// Sub-tiles of a partly masked block, in rows (queries) and keys; chosen by measurement
// (docs/benchmarks.md, "CPU kernels skip masked sub-tiles"). A block is planned as query tiles
// of kQueryTile rows; each sees the block's keys in tiles of kKeyTile keys, each key tile skipped
// (invisible to every row of the query tile), taken whole, or masked per pair.
constexpr int64_t kQueryTile = 32;
constexpr int64_t kKeyTile = 32;
// Query panels of a partly masked block: up to kPanelRows rows whose positions step evenly. The
// key tiles that every row of a panel sees whole (a causal block's keys before the panel, a zigzag
// chunk pair) are one product of the whole panel; only the rest is planned per query tile.
// 32-row products pack their keys once per tile, so a block cut only between whole chunks ran 7-10%
// below the dense rate and a causal diagonal far below it (docs/benchmarks.md, "Query panels").
constexpr int64_t kPanelRows = 128;
// Most scores one dense tile holds (4 MiB of fp32).
constexpr int64_t kDenseScoreElements = int64_t{1} << 20;

// Key rows [begin, end) of the block that a query tile reads with one product per operand;
// their scores are columns [col, col + end - begin) of the tile's compact score matrix.
struct KeySpan {
  int64_t begin = 0, end = 0, col = 0;
  int64_t size() const { return end - begin; }
};

// What one query tile computes: rows [row_begin, row_begin + rows) of the block against the keys
// of `runs` (maximal runs of consecutive visible key tiles, in key order; `cols` keys in all).
// `masked` lists the key tiles, inside the runs, whose pairs need the per-pair mask; every other
// pair of the runs is visible. Keys outside the runs are invisible to every row of the tile.
// `accumulate`: the rows already hold a normalised partial (o, lse) of other keys of the block (the
// panel's shared keys), which the forward folds this plan's keys into.
struct TilePlan {
  int64_t row_begin = 0, rows = 0, cols = 0;
  std::vector<KeySpan> runs, masked;
  bool accumulate = false;
};

// Key rows [begin, end) of a block planned as one tile, and their positions' range.
struct KeyTile {
  int64_t begin = 0, end = 0;
  PositionRange positions;
};

// Per-thread scratch, reused across calls (each rank runs on its own thread): no allocation or
// fresh page faults per block.
struct Scratch {
  std::vector<float> scores, ds, row, inv_sum, o_part, lse_part;
  std::vector<KeyTile> key_tiles;
  std::vector<size_t> pending;  // key tiles a panel sees in part, planned per query tile
  TilePlan plan;
};
thread_local Scratch scratch;

float* Buffer(std::vector<float>& v, int64_t n) {
  if (v.size() < static_cast<size_t>(n)) v.resize(static_cast<size_t>(n));
  return v.data();
}

// Rows [begin, end) of `r` as their own view.
RowsView Slice(const RowsView& r, int64_t begin, int64_t end) {
  return {r.data + begin * r.stride, end - begin, r.stride,
          r.positions == nullptr ? nullptr : r.positions + begin};
}

// Appends key rows [begin, end) at the end of the plan's columns, extending the last run when
// the keys follow it.
void AppendKeys(std::vector<KeySpan>& spans, int64_t begin, int64_t end, int64_t col) {
  if (!spans.empty() && spans.back().end == begin) {
    spans.back().end = end;
  } else {
    spans.push_back({begin, end, col});
  }
}

// Plans query rows [row_begin, row_end) of a partly masked block against the key tiles listed in
// `tiles` (indices into `key_tiles`, ascending).
void PlanTile(const RowsView& q, int64_t row_begin, int64_t row_end,
              const std::vector<KeyTile>& key_tiles, const std::vector<size_t>& tiles,
              const MaskRule& mask, TilePlan& plan) {
  plan.row_begin = row_begin;
  plan.rows = row_end - row_begin;
  plan.cols = 0;
  plan.runs.clear();
  plan.masked.clear();
  const PositionRange qr = RangeOf(q.positions + row_begin, plan.rows);
  for (size_t t : tiles) {
    const Visibility visibility = Classify(qr, key_tiles[t].positions, mask);
    if (visibility == Visibility::kNone) continue;
    const int64_t begin = key_tiles[t].begin, end = key_tiles[t].end;
    AppendKeys(plan.runs, begin, end, plan.cols);
    if (visibility == Visibility::kPartial) AppendKeys(plan.masked, begin, end, plan.cols);
    plan.cols += end - begin;
  }
}

// End of the run of rows from `begin` whose positions step by one constant amount: a zigzag or
// balanced shard's rows are a few such runs (its chunks), a contiguous or striped one's one. Tiles
// and panels stay inside a run: one across a jump spans both chunks' positions and is seen in
// part by rows that see either (documents over balanced chunks of 512 cost 1.48x the contiguous
// block's time per charged pair before, `mask_kernel_bench --chunks 12`, docs/benchmarks.md).
int64_t StepRunEnd(const int64_t* positions, int64_t begin, int64_t rows) {
  if (begin + 2 >= rows) return rows;
  const int64_t step = positions[begin + 1] - positions[begin];
  int64_t end = begin + 2;
  while (end < rows && positions[end] - positions[end - 1] == step) ++end;
  return end;
}

// End of the query panel that starts at row `begin` of a run that ends at `run_end`
// (StepRunEnd): at most `max_rows` rows, cut back to whole query tiles where the run goes on. A
// panel also ends where a document starts (its last tile then short): rows of two documents share
// no key, so a panel across a start would see no key tile whole and run entirely as query tiles.
int64_t PanelEnd(const RowsView& q, int64_t begin, int64_t run_end, int64_t max_rows,
                 const MaskRule& mask) {
  int64_t end = std::min(run_end, begin + max_rows);
  if (end - begin > 1) {
    const int64_t step = q.positions[begin + 1] - q.positions[begin];
    const int64_t next_start = mask.NextDocumentStart(q.positions[begin]);
    if (step > 0 && next_start <= q.positions[end - 1]) {
      return begin + (next_start - q.positions[begin] + step - 1) / step;
    }
  }
  if (end < run_end) end = begin + std::max<int64_t>(1, (end - begin) / kQueryTile) * kQueryTile;
  return end;
}

// End of the key tile that starts at row `begin` of a run that ends at `run_end`: kKeyTile keys,
// or fewer where the run ends, or where a document starts inside them and their positions
// increase: a tile across a start is seen in part by every row of both documents (masked pair by
// pair), two tiles each seen whole or not at all.
int64_t KeyTileEnd(const RowsView& k, int64_t begin, int64_t run_end, const MaskRule& mask) {
  const int64_t end = std::min(begin + kKeyTile, run_end);
  const int64_t next_start = mask.NextDocumentStart(k.positions[begin]);
  if (next_start > k.positions[end - 1]) return end;
  for (int64_t row = begin + 1; row < end; ++row) {
    if (k.positions[row] <= k.positions[row - 1]) return end;  // not increasing: one tile
  }
  int64_t split = begin + 1;
  while (k.positions[split] < next_start) ++split;
  return split;
}

// Calls fn(plan) for each piece of a block with some visible pair (visibility kAll or kPartial).
// An entirely visible block is one piece per row band with one unmasked run: the dense products,
// as large as possible. A partly masked block is split into query panels (PanelEnd) and key tiles
// of kKeyTile keys: the key tiles every row of a panel sees whole are one piece of the whole panel
// (unmasked runs); the key tiles it sees in part are planned per query tile of kQueryTile rows
// (skipped, whole, or masked per pair), a piece with `accumulate` set when the panel's piece came
// first. Every visible pair lies in exactly one piece, and each row's pieces come in that order.
template <typename Fn>
void ForEachTile(const RowsView& q, const RowsView& k, const MaskRule& mask, Visibility visibility,
                 Fn&& fn) {
  TilePlan& plan = scratch.plan;
  if (visibility == Visibility::kAll) {
    // Row bands of at most kDenseScoreElements scores: products stay large, and the per-thread
    // scratch stays bounded whatever the block's size (a whole 4K x 4K block would hold 64 MiB of
    // scores and as much of dS on every worker thread).
    const int64_t band =
        std::max<int64_t>(kQueryTile, kDenseScoreElements / std::max<int64_t>(1, k.rows));
    for (int64_t begin = 0; begin < q.rows; begin += band) {
      plan.row_begin = begin;
      plan.rows = std::min(band, q.rows - begin);
      plan.cols = k.rows;
      plan.runs.assign(1, KeySpan{0, k.rows, 0});
      plan.masked.clear();
      plan.accumulate = false;
      fn(plan);
    }
    return;
  }
  std::vector<KeyTile>& key_tiles = scratch.key_tiles;
  key_tiles.clear();
  for (int64_t run = 0; run < k.rows;) {
    const int64_t run_end = StepRunEnd(k.positions, run, k.rows);
    for (int64_t begin = run; begin < run_end;) {
      const int64_t end = KeyTileEnd(k, begin, run_end, mask);
      key_tiles.push_back({begin, end, RangeOf(k.positions + begin, end - begin)});
      begin = end;
    }
    run = run_end;
  }
  // The panel's shared piece holds at most kDenseScoreElements scores.
  const int64_t max_panel =
      std::max<int64_t>(kQueryTile, kDenseScoreElements / std::max<int64_t>(1, k.rows));
  std::vector<size_t>& pending = scratch.pending;
  // Rows [panel, panel_end) against every key tile: the tiles it sees whole become plan's runs,
  // the ones it sees in part go to `pending`.
  auto plan_panel = [&](int64_t panel, int64_t panel_end) {
    const PositionRange pr = RangeOf(q.positions + panel, panel_end - panel);
    plan.row_begin = panel;
    plan.rows = panel_end - panel;
    plan.cols = 0;
    plan.runs.clear();
    plan.masked.clear();
    plan.accumulate = false;
    pending.clear();
    for (size_t t = 0; t < key_tiles.size(); ++t) {
      const Visibility visibility = Classify(pr, key_tiles[t].positions, mask);
      if (visibility == Visibility::kNone) continue;
      if (visibility == Visibility::kPartial) {
        pending.push_back(t);
        continue;
      }
      const int64_t begin = key_tiles[t].begin, end = key_tiles[t].end;
      AppendKeys(plan.runs, begin, end, plan.cols);
      plan.cols += end - begin;
    }
  };
  for (int64_t run = 0; run < q.rows;) {
    const int64_t run_end = StepRunEnd(q.positions, run, q.rows);
    for (int64_t panel = run; panel < run_end;) {
      int64_t panel_end = PanelEnd(q, panel, run_end, std::min(kPanelRows, max_panel), mask);
      plan_panel(panel, panel_end);
      if (pending.empty()) {
        // Seen whole by every row (a zigzag chunk pair): as many rows as the run has and still
        // seeing no key tile in part, one product as large as a dense block's.
        const int64_t wide_end = PanelEnd(q, panel, run_end, max_panel, mask);
        if (wide_end > panel_end) {
          plan_panel(panel, wide_end);
          if (pending.empty()) {
            panel_end = wide_end;
          } else {
            plan_panel(panel, panel_end);
          }
        }
      }
      const bool shared = plan.cols > 0;
      if (shared) fn(plan);
      if (!pending.empty() || !shared) {
        for (int64_t begin = panel; begin < panel_end; begin += kQueryTile) {
          PlanTile(q, begin, std::min(begin + kQueryTile, panel_end), key_tiles, pending, mask,
                   plan);
          plan.accumulate = shared;
          if (plan.cols > 0 || !shared) fn(plan);
        }
      }
      panel = panel_end;
    }
    run = run_end;
  }
}

// s = scale * q_tile k_runs^T for the plan's columns (the scale is applied as the GEMM's alpha),
// with the masked pairs of its masked key tiles set to -inf.
void TileScores(Dense& s, const TilePlan& plan, const RowsView& q, const RowsView& k, int64_t d,
                float scale, const MaskRule& mask) {
  const ConstView qt = Map(Slice(q, plan.row_begin, plan.row_begin + plan.rows), d);
  for (const KeySpan& run : plan.runs) {
    s.middleCols(run.col, run.size()).noalias() =
        scale * qt * Map(Slice(k, run.begin, run.end), d).transpose();
  }
  if (plan.masked.empty()) return;
  // Per pair only two comparisons: the row's visible keys are one range (found once per row).
  for (int64_t i = 0; i < plan.rows; ++i) {
    const VisibleKeyRange visible = mask.VisibleKeys(q.positions[plan.row_begin + i]);
    for (const KeySpan& span : plan.masked) {
      float* row = s.data() + i * plan.cols + span.col;
      const int64_t* key_positions = k.positions + span.begin;
      for (int64_t j = 0; j < span.size(); ++j) {
        if (!visible.Contains(key_positions[j])) row[j] = kNegInf;
      }
    }
  }
}

// row[j] = exp(row[j] - shift), with exactly 0 where row[j] is -inf (masked). Eigen's vectorised
// exp clamps its argument at about -88.7 and so returns a denormal (~1e-39), not 0, for -inf;
// denormals then slow every following product by an order of magnitude.
void ExpShifted(float* row, int64_t n, float shift, bool masked, float* tmp) {
  Eigen::Map<Eigen::ArrayXf> r(row, n);
  if (!masked) {
    r = (r - shift).exp();
    return;
  }
  Eigen::Map<Eigen::ArrayXf> t(tmp, n);
  t = (r - shift).exp();
  for (int64_t j = 0; j < n; ++j) row[j] = row[j] == kNegInf ? 0.0f : tmp[j];
}

// Forward for the query rows of one piece over the piece's keys: their normalised o rows and lse
// (row i of the piece goes to out_rows row i and lse[i]); a row without a visible key gets 0 and
// -inf.
void TileForward(const TilePlan& plan, const RowsView& q, const RowsView& k, const RowsView& v,
                 int64_t d, float scale, const MaskRule& mask, View out_rows, float* lse) {
  Dense s(Buffer(scratch.scores, plan.rows * plan.cols), plan.rows, plan.cols);
  TileScores(s, plan, q, k, d, scale, mask);
  const bool masked = !plan.masked.empty();
  float* tmp = Buffer(scratch.row, plan.cols);
  float* inv_sum = Buffer(scratch.inv_sum, plan.rows);
  for (int64_t i = 0; i < plan.rows; ++i) {
    float* row = s.data() + i * plan.cols;
    const float m = s.row(i).maxCoeff();
    if (m == kNegInf) {  // no visible key
      s.row(i).setZero();
      lse[i] = kNegInf;
      inv_sum[i] = 0;
      continue;
    }
    ExpShifted(row, plan.cols, m, masked, tmp);
    const float l = s.row(i).sum();
    lse[i] = m + std::log(l);
    inv_sum[i] = 1.0f / l;
  }
  // Normalise the [rows x d] output instead of the [rows x cols] probabilities.
  for (size_t r = 0; r < plan.runs.size(); ++r) {
    const KeySpan& run = plan.runs[r];
    const auto pv = s.middleCols(run.col, run.size()) * Map(Slice(v, run.begin, run.end), d);
    if (r == 0) {
      out_rows.noalias() = pv;
    } else {
      out_rows.noalias() += pv;
    }
  }
  for (int64_t i = 0; i < plan.rows; ++i) out_rows.row(i) *= inv_sum[i];
}

// Backward for the query rows of one tile: adds their dq rows and their contributions to the dk
// and dv rows of the tile's runs (keys outside the runs have P = 0 for these rows).
void TileBackward(const TilePlan& plan, const RowsView& q, const RowsView& k, const RowsView& v,
                  const RowsView& d_o, const float* lse, const float* delta, int64_t d, float scale,
                  const MaskRule& mask, View& dq, View& dk, View& dv) {
  const int64_t rows = plan.rows, cols = plan.cols, row_begin = plan.row_begin;
  Dense p(Buffer(scratch.scores, rows * cols), rows, cols);
  TileScores(p, plan, q, k, d, scale, mask);
  const bool masked = !plan.masked.empty();
  float* tmp = Buffer(scratch.row, cols);
  for (int64_t i = 0; i < rows; ++i) {
    if (lse[row_begin + i] == kNegInf) {
      p.row(i).setZero();
    } else {
      ExpShifted(p.data() + i * cols, cols, lse[row_begin + i], masked, tmp);  // masked: exactly 0
    }
  }
  const ConstView qt = Map(Slice(q, row_begin, row_begin + rows), d);
  const ConstView dot = Map(Slice(d_o, row_begin, row_begin + rows), d);
  Dense ds(Buffer(scratch.ds, rows * cols), rows, cols);
  for (const KeySpan& run : plan.runs) {
    dv.middleRows(run.begin, run.size()).noalias() +=
        p.middleCols(run.col, run.size()).transpose() * dot;
    ds.middleCols(run.col, run.size()).noalias() =
        dot * Map(Slice(v, run.begin, run.end), d).transpose();  // dP
  }
  for (int64_t i = 0; i < rows; ++i) {
    ds.row(i) = (p.row(i).array() * (ds.row(i).array() - delta[row_begin + i])).matrix();
  }
  // The scale is applied as the GEMMs' alpha.
  auto dq_rows = dq.middleRows(row_begin, rows);
  for (const KeySpan& run : plan.runs) {
    const auto ds_run = ds.middleCols(run.col, run.size());
    dq_rows.noalias() += scale * ds_run * Map(Slice(k, run.begin, run.end), d);
    dk.middleRows(run.begin, run.size()).noalias() += scale * ds_run.transpose() * qt;
  }
}

}  // namespace

MaskRule::MaskRule(const Mask& mask) : params_(mask.Params()) {
  if (mask.IsDocuments()) {
    int64_t start = 0;
    for (int64_t length : mask.document_lengths) {
      doc_starts_.push_back(start);
      start += length;
    }
    sequence_end_ = start;
  }
}

int64_t MaskRule::NextDocumentStart(int64_t position) const {
  const auto next = std::upper_bound(doc_starts_.begin(), doc_starts_.end(), position);
  return next == doc_starts_.end() ? std::numeric_limits<int64_t>::max() : *next;
}

VisibleKeyRange MaskRule::VisibleKeys(int64_t q) const {
  if (!HasDocuments(params_.kind)) return meshplan::VisibleKeys(params_, q, 0, 0);
  // DocOf(q) documents start at or before q: q's is the last of them.
  const size_t doc = static_cast<size_t>(DocOf(q));
  if (doc == 0) return {1, 0};  // before every document: no key (positions are never negative)
  const int64_t first = doc_starts_[doc - 1];
  const int64_t end = doc < doc_starts_.size() ? doc_starts_[doc] : sequence_end_;
  return meshplan::VisibleKeys(params_, q, first, end - 1);
}

void BlockForward(const RowsView& q, const RowsView& k, const RowsView& v, int64_t d, float scale,
                  const MaskRule& mask, MutableRows o, float* lse) {
  const int64_t nq = q.rows, nk = k.rows;
  View out = Map(o, d);
  const Visibility visibility = nq == 0 || nk == 0 ? Visibility::kNone : Classify(q, k, mask);
  if (visibility == Visibility::kNone) {  // no visible key in any row
    out.setZero();
    std::fill(lse, lse + nq, kNegInf);
    return;
  }
  ForEachTile(q, k, mask, visibility, [&](const TilePlan& plan) {
    if (plan.accumulate) {  // fold this piece's keys into the panel's partial
      float* o_part = Buffer(scratch.o_part, plan.rows * d);
      float* lse_part = Buffer(scratch.lse_part, plan.rows);
      TileForward(plan, q, k, v, d, scale, mask,
                  View(o_part, plan.rows, d, Eigen::OuterStride<>(d)), lse_part);
      MergePartial({o.data + plan.row_begin * o.stride, plan.rows, o.stride}, lse + plan.row_begin,
                   o_part, d, lse_part, d);
    } else if (plan.cols > 0) {
      TileForward(
          plan, q, k, v, d, scale, mask,
          View(o.data + plan.row_begin * o.stride, plan.rows, d, Eigen::OuterStride<>(o.stride)),
          lse + plan.row_begin);
    } else {  // no visible key in any row of the tile
      out.middleRows(plan.row_begin, plan.rows).setZero();
      std::fill(lse + plan.row_begin, lse + plan.row_begin + plan.rows, kNegInf);
    }
  });
}

BlockWorkPairs PlannedPairs(const RowsView& q, const RowsView& k, const MaskRule& mask) {
  BlockWorkPairs work;
  const Visibility visibility =
      q.rows == 0 || k.rows == 0 ? Visibility::kNone : Classify(q, k, mask);
  if (visibility == Visibility::kNone) return work;
  ForEachTile(q, k, mask, visibility, [&](const TilePlan& plan) {
    work.computed += plan.rows * plan.cols;
    for (const KeySpan& tile : plan.masked) work.masked += plan.rows * tile.size();
  });
  return work;
}

void MergePartial(MutableRows o, float* lse, const float* o_in, int64_t o_in_stride,
                  const float* lse_in, int64_t d) {
  View acc = Map(o, d);
  const ConstView in(o_in, o.rows, d, Eigen::OuterStride<>(o_in_stride));
  for (int64_t i = 0; i < o.rows; ++i) {
    const float a = lse[i], b = lse_in[i];
    if (b == kNegInf) continue;
    if (a == kNegInf) {
      acc.row(i) = in.row(i);
      lse[i] = b;
      continue;
    }
    const float m = std::max(a, b);
    const float merged = m + std::log(std::exp(a - m) + std::exp(b - m));
    acc.row(i) = std::exp(a - merged) * acc.row(i) + std::exp(b - merged) * in.row(i);
    lse[i] = merged;
  }
}

void BlockBackward(const RowsView& q, const RowsView& k, const RowsView& v, const RowsView& d_o,
                   const float* lse, const float* delta, int64_t d, float scale,
                   const MaskRule& mask, MutableRows dq, MutableRows dk, MutableRows dv) {
  const Visibility visibility =
      q.rows == 0 || k.rows == 0 ? Visibility::kNone : Classify(q, k, mask);
  if (visibility == Visibility::kNone) return;  // P = 0: nothing to add
  View dq_all = Map(dq, d), dk_all = Map(dk, d), dv_all = Map(dv, d);
  ForEachTile(q, k, mask, visibility, [&](const TilePlan& plan) {
    if (plan.cols > 0)
      TileBackward(plan, q, k, v, d_o, lse, delta, d, scale, mask, dq_all, dk_all, dv_all);
  });
}

}  // namespace meshplan::exec
