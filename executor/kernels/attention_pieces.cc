#include "executor/kernels/attention_pieces.h"

#include <algorithm>

namespace meshplan::exec {
namespace {

struct Run {
  int64_t row0 = 0, rows = 0;
  int64_t first = 0;  // token position of row0; row row0 + i holds first + i
};

// Maximal runs of rows whose positions go up by one; nullopt past `limit` runs.
std::optional<std::vector<Run>> Runs(const std::vector<int64_t>& pos, int32_t limit) {
  std::vector<Run> runs;
  const int64_t n = static_cast<int64_t>(pos.size());
  for (int64_t i = 0; i < n;) {
    int64_t j = i + 1;
    while (j < n && pos[static_cast<size_t>(j)] == pos[static_cast<size_t>(j - 1)] + 1) ++j;
    if (static_cast<int32_t>(runs.size()) >= limit) return std::nullopt;
    runs.push_back({i, j - i, pos[static_cast<size_t>(i)]});
    i = j;
  }
  return runs;
}

// Causal pieces of one run pair whose query row i (from q.row0) sees key row j (from k.row0) iff
// j <= i + c: c = q.first - k.first for runs of consecutive positions, and the same divided by
// the step (rounded down) for runs that go up by one common step (Stride).
void CausalPieces(const Run& q, const Run& k, int64_t c, std::vector<AttentionPiece>& out) {
  const int64_t n = q.rows, m = k.rows;
  if (c >= m - 1) {  // even the first query row sees the last key
    out.push_back({q.row0, n, k.row0, m, PieceMask::kFull});
    return;
  }
  if (n - 1 + c < 0) return;  // even the last query row is before the first key
  int64_t skip = 0;           // leading query rows that see no key (c < 0)
  if (c < 0) {
    skip = -c;
    c = 0;
  }
  const int64_t rows = n - skip;  // rows from q.row0 + skip, seeing j <= i + c
  // Rows with i + c <= m - 1 see a prefix of the keys that grows by one per row: a causal
  // triangle over the first tri_rows + c keys, aligned at its bottom-right corner (top-left when
  // square). Later rows see every key.
  const int64_t tri_rows = std::min(rows, m - c);
  const int64_t tri_keys = tri_rows + c;
  out.push_back({q.row0 + skip, tri_rows, k.row0, tri_keys,
                 c == 0 ? PieceMask::kCausalTopLeft : PieceMask::kCausalBottomRight});
  if (rows > tri_rows)
    out.push_back({q.row0 + skip + tri_rows, rows - tri_rows, k.row0, m, PieceMask::kFull});
}

// Pieces of one run pair under a window of w >= 1 rows: query row i (from q.row0) sees key row j
// (from k.row0) iff i + c - w < j <= i + c, 0 <= j < k.rows. For runs of consecutive positions
// c = q.first - k.first and w is the window W; for a striped block both are quotients by the step
// (StridedPieces). Appends, on the rows and keys that hold a visible pair only:
// - the causal pieces of CausalPieces (a full rectangle, a triangle, or both) when the last of
//   those rows still sees the first of those keys (the window's lower edge cuts nothing);
// - else one kBand piece when there are no more such rows than keys (its contract in
//   attention_pieces.h holds: see the bounds below);
// - else the causal pieces of the rows that see the first key and one band for the rows after
//   them (at most 3 pieces).
void BandPieces(const Run& q, const Run& k, int64_t c, int64_t w,
                std::vector<AttentionPiece>& out) {
  const int64_t n = q.rows, m = k.rows;
  // A window wider than every distance in the pair cuts nothing; narrowing it to n + c keeps the
  // sums below far from overflow (when n + c <= 0 no row sees a key, whatever the width).
  if (w > n + c) w = std::max<int64_t>(1, n + c);
  // Rows that see a key: the diagonal reaches key 0 (i + c >= 0) and the band starts at or
  // before the last key (i + c - w + 1 <= m - 1). Row i sees keys lo(i) = max(0, i + c - w + 1)
  // to hi(i) = min(m - 1, i + c), both non-decreasing in i, so those rows' keys run from the first
  // row's lo to the last row's hi.
  const int64_t r0 = std::max<int64_t>(0, -c), r1 = std::min(n - 1, m + w - 2 - c);
  if (r0 > r1) return;
  const int64_t k0 = std::max<int64_t>(0, r0 + c - w + 1), k1 = std::min(m - 1, r1 + c);
  // On these rows and keys row i sees j iff i + off - w < j <= i + off. 0 <= off <= w - 1: off is
  // c + r0 >= 0 with r0 + c <= w - 1 when k0 = 0, and w - 1 when k0 = r0 + c - w + 1.
  const int64_t rows = r1 - r0 + 1, keys = k1 - k0 + 1, off = c + r0 - k0;
  const Run hq{q.row0 + r0, rows, q.first + r0}, hk{k.row0 + k0, keys, k.first + k0};
  if (rows - 1 + off - w + 1 <= 0) {  // the last row's window reaches back to key 0
    CausalPieces(hq, hk, off, out);
    return;
  }
  // rows <= keys whenever k0 > 0: every row's lo is then r0 + c - w + 1 plus its index, and
  // keys = min(m - 1, r1 + c) - k0 + 1 is r1 - r0 + w or m + w - 1 - c - r0 >= r1 - r0 + 1.
  if (rows <= keys) {
    out.push_back({hq.row0, rows, hk.row0, keys, PieceMask::kBand, off, w});
    return;
  }
  // So k0 = 0: rows 0..split-1 see key 0 (i + off - w < 0), rows split.. do not, with
  // 1 <= split <= rows - 1 (off <= w - 1, and the last row does not see key 0). The first part
  // takes the causal branch above, the second the band branch (its keys start after 0).
  const int64_t split = w - off;
  BandPieces({hq.row0, split, hq.first}, hk, off, w, out);
  BandPieces({hq.row0 + split, rows - split, hq.first + split}, hk, off + split, w, out);
}

// The step s >= 1 by which every position follows the previous one (0 for a single row), or
// nullopt when the positions are no such progression.
std::optional<int64_t> Stride(const std::vector<int64_t>& pos) {
  if (pos.size() < 2) return 0;
  const int64_t s = pos[1] - pos[0];
  if (s < 1) return std::nullopt;
  for (size_t i = 2; i < pos.size(); ++i) {
    if (pos[i] - pos[i - 1] != s) return std::nullopt;
  }
  return s;
}

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// A striped block: query positions q0 + s i and key positions k0 + s j with one step s (either
// side may be a single row). Causal: key j is visible to query i iff k0 + s j <= q0 + s i, i.e.
// j <= i + floor((q0 - k0) / s): the same triangle-and-rectangle split as consecutive runs, on row
// indices. Window W: also q0 + s i - (k0 + s j) < W, i.e. j > i + floor((q0 - k0 - W) / s): a
// band of width floor((q0 - k0) / s) - floor((q0 - k0 - W) / s) on row indices (nothing visible
// when that is 0: no distance q - k of the progressions lies in [0, W)). nullopt when the
// positions are not such progressions.
std::optional<std::vector<AttentionPiece>> StridedPieces(const std::vector<int64_t>& q_positions,
                                                         const std::vector<int64_t>& k_positions,
                                                         const MaskParams& mask) {
  const auto sq = Stride(q_positions), sk = Stride(k_positions);
  if (!sq || !sk || q_positions.empty() || k_positions.empty()) return std::nullopt;
  if (*sq > 0 && *sk > 0 && *sq != *sk) return std::nullopt;
  const int64_t s = std::max<int64_t>(1, std::max(*sq, *sk));
  const Run q{0, static_cast<int64_t>(q_positions.size()), q_positions.front()};
  const Run k{0, static_cast<int64_t>(k_positions.size()), k_positions.front()};
  const int64_t d = q.first - k.first, c = FloorDiv(d, s);
  std::vector<AttentionPiece> pieces;
  if (mask.kind == MaskKind::kWindow) {
    const int64_t w = c - FloorDiv(d - mask.window, s);
    if (w > 0) BandPieces(q, k, c, w, pieces);
  } else {
    CausalPieces(q, k, c, pieces);
  }
  return pieces;
}

// A full piece over the same query rows as the piece before it, on the key rows right after
// it, extends it: full rectangles need adjacent rows, not consecutive positions (gathered keys of
// zigzag shards give many such runs). Looks at the last piece only when the last run pair added
// exactly one piece (`before`: the count before that pair).
void MergeLastFull(std::vector<AttentionPiece>& pieces, size_t before) {
  if (pieces.size() != before + 1 || before == 0) return;
  AttentionPiece& prev = pieces[before - 1];
  const AttentionPiece& cur = pieces[before];
  if (prev.mask == PieceMask::kFull && cur.mask == PieceMask::kFull && prev.q_row0 == cur.q_row0 &&
      prev.q_rows == cur.q_rows && prev.k_row0 + prev.k_rows == cur.k_row0) {
    prev.k_rows += cur.k_rows;
    pieces.pop_back();
  }
}

// A run of rows (positions run.first + step i) that lies in one document.
struct DocRun {
  Run run;
  int64_t doc = 0;  // index into the document starts
};

// Cuts each run, whose positions go up by `step` >= 1, at the document starts inside it: a new
// cut run begins at the first row whose position is at or past each start. Appends in row order;
// each cut run keeps the step. nullopt when a position lies before doc_starts[0]
// (REQUIRES: doc_starts non-empty and ascending).
std::optional<std::vector<DocRun>> CutAtDocuments(const std::vector<Run>& runs, int64_t step,
                                                  std::span<const int64_t> doc_starts) {
  std::vector<DocRun> out;
  for (const Run& r : runs) {
    for (int64_t i = 0; i < r.rows;) {
      const int64_t pos = r.first + step * i;
      const auto next = std::upper_bound(doc_starts.begin(), doc_starts.end(), pos);
      if (next == doc_starts.begin()) return std::nullopt;
      const int64_t doc = static_cast<int64_t>(next - doc_starts.begin()) - 1;
      // Rows i.. up to the last whose position is before the next document's start.
      int64_t rows = r.rows - i;
      if (next != doc_starts.end()) rows = std::min(rows, (*next - pos + step - 1) / step);
      out.push_back({{r.row0 + i, rows, pos}, doc});
      i += rows;
    }
  }
  return out;
}

// The pieces of a block under documents (causal within each document) or documents-full (every
// pair within each document): both sides as runs of consecutive positions (step 1), or, past
// `max_pieces` runs, as one progression of a common step each; the runs cut at the document
// starts (CutAtDocuments); then per (query run, key run) pair in one document, a full rectangle
// (documents-full) or CausalPieces with c = floor((q.first - k.first) / step) (documents: the
// causal rule on the pair's rows, as for a striped block); pairs in different documents hold
// nothing. Key runs are grouped by document, so only pairs in one document are visited. nullopt
// when the positions are neither, a position lies before the first start, or the pieces are more
// than `max_pieces`.
std::optional<std::vector<AttentionPiece>> DocumentPieces(const std::vector<int64_t>& q_positions,
                                                          const std::vector<int64_t>& k_positions,
                                                          MaskKind kind,
                                                          std::span<const int64_t> doc_starts,
                                                          int32_t max_pieces) {
  if (q_positions.empty() || k_positions.empty()) return std::vector<AttentionPiece>{};
  int64_t step = 1;
  auto q_runs = Runs(q_positions, max_pieces);
  auto k_runs = Runs(k_positions, max_pieces);
  if (!q_runs || !k_runs) {
    const auto sq = Stride(q_positions), sk = Stride(k_positions);
    if (!sq || !sk || (*sq > 0 && *sk > 0 && *sq != *sk)) return std::nullopt;
    step = std::max<int64_t>(1, std::max(*sq, *sk));
    q_runs = std::vector<Run>{{0, static_cast<int64_t>(q_positions.size()), q_positions.front()}};
    k_runs = std::vector<Run>{{0, static_cast<int64_t>(k_positions.size()), k_positions.front()}};
  }
  const auto q_cut = CutAtDocuments(*q_runs, step, doc_starts);
  auto k_cut = CutAtDocuments(*k_runs, step, doc_starts);
  if (!q_cut || !k_cut) return std::nullopt;
  // Key runs by document, in row order within each (so adjacent full pieces still merge).
  std::stable_sort(k_cut->begin(), k_cut->end(),
                   [](const DocRun& a, const DocRun& b) { return a.doc < b.doc; });
  std::vector<AttentionPiece> pieces;
  for (const DocRun& q : *q_cut) {
    auto it = std::lower_bound(k_cut->begin(), k_cut->end(), q.doc,
                               [](const DocRun& a, int64_t doc) { return a.doc < doc; });
    for (; it != k_cut->end() && it->doc == q.doc; ++it) {
      const Run& k = it->run;
      const size_t before = pieces.size();
      if (kind == MaskKind::kDocumentsFull) {
        pieces.push_back({q.run.row0, q.run.rows, k.row0, k.rows, PieceMask::kFull});
      } else {
        CausalPieces(q.run, k, FloorDiv(q.run.first - k.first, step), pieces);
      }
      MergeLastFull(pieces, before);
      if (static_cast<int64_t>(pieces.size()) > max_pieces) return std::nullopt;
    }
  }
  return pieces;
}

}  // namespace

std::optional<std::vector<AttentionPiece>> SplitIntoPieces(const std::vector<int64_t>& q_positions,
                                                           const std::vector<int64_t>& k_positions,
                                                           const MaskParams& mask,
                                                           int32_t max_pieces) {
  return SplitIntoPieces(q_positions, k_positions, mask, {}, max_pieces);
}

std::optional<std::vector<AttentionPiece>> SplitIntoPieces(const std::vector<int64_t>& q_positions,
                                                           const std::vector<int64_t>& k_positions,
                                                           const MaskParams& mask,
                                                           std::span<const int64_t> doc_starts,
                                                           int32_t max_pieces) {
  if (HasDocuments(mask.kind)) {
    if (doc_starts.empty() || doc_starts.front() != 0) return std::nullopt;
    return DocumentPieces(q_positions, k_positions, mask.kind, doc_starts, max_pieces);
  }
  const bool window = mask.kind == MaskKind::kWindow;
  if (mask.kind != MaskKind::kFull && mask.kind != MaskKind::kCausal && !window)
    return std::nullopt;
  if (window && mask.window < 1) return std::nullopt;
  std::vector<AttentionPiece> pieces;
  const int64_t n = static_cast<int64_t>(q_positions.size()),
                m = static_cast<int64_t>(k_positions.size());
  // Full: every pair visible, positions do not matter, the block is one rectangle.
  if (mask.kind == MaskKind::kFull) {
    if (n > 0 && m > 0) pieces.push_back({0, n, 0, m, PieceMask::kFull});
    return pieces;
  }
  const auto q_runs = Runs(q_positions, max_pieces);
  const auto k_runs = Runs(k_positions, max_pieces);
  if (!q_runs || !k_runs) {
    // Too many runs of consecutive positions: a striped block, whose rows go up by the stripe
    // step on both sides, is still one to three pieces.
    auto strided = StridedPieces(q_positions, k_positions, mask);
    if (strided && static_cast<int32_t>(strided->size()) <= max_pieces) return strided;
    return std::nullopt;
  }
  for (const Run& q : *q_runs) {
    for (const Run& k : *k_runs) {
      const size_t before = pieces.size();
      if (window) {
        BandPieces(q, k, q.first - k.first, mask.window, pieces);
      } else {
        CausalPieces(q, k, q.first - k.first, pieces);
      }
      MergeLastFull(pieces, before);
      if (static_cast<int32_t>(pieces.size()) > max_pieces) return std::nullopt;
    }
  }
  return pieces;
}

std::optional<std::vector<AttentionPiece>> SplitIntoPieces(const std::vector<int64_t>& q_positions,
                                                           const std::vector<int64_t>& k_positions,
                                                           MaskKind mask_kind, int32_t max_pieces) {
  MaskParams mask;
  mask.kind = mask_kind;
  return SplitIntoPieces(q_positions, k_positions, mask, max_pieces);
}

namespace {

// The runs that gather `pos` into ascending order (stable), and the sorted positions; nullopt
// past `max_runs` runs.
std::optional<std::vector<RowRun>> OrderRuns(const std::vector<int64_t>& pos, int32_t max_runs,
                                             std::vector<int64_t>& sorted) {
  std::vector<int64_t> order(pos.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return pos[static_cast<size_t>(a)] < pos[static_cast<size_t>(b)];
  });
  std::vector<RowRun> runs;
  sorted.resize(pos.size());
  for (size_t d = 0; d < order.size(); ++d) {
    sorted[d] = pos[static_cast<size_t>(order[d])];
    if (!runs.empty() && runs.back().src_row0 + runs.back().rows == order[d]) {
      ++runs.back().rows;
      continue;
    }
    if (static_cast<int32_t>(runs.size()) >= max_runs) return std::nullopt;
    runs.push_back({order[d], static_cast<int64_t>(d), 1});
  }
  return runs;
}

bool IsIdentity(const std::vector<RowRun>& runs) {
  return runs.size() <= 1;  // one run covering every row from row 0 (or no rows)
}

}  // namespace

std::optional<OrderedSplit> SplitInPositionOrder(const std::vector<int64_t>& q_positions,
                                                 const std::vector<int64_t>& k_positions,
                                                 const MaskParams& mask,
                                                 std::span<const int64_t> doc_starts,
                                                 int32_t max_pieces, int32_t max_runs) {
  if (q_positions.empty() || k_positions.empty()) return std::nullopt;  // SplitIntoPieces answers
  std::vector<int64_t> q_sorted, k_sorted;
  auto q_runs = OrderRuns(q_positions, max_runs, q_sorted);
  auto k_runs = OrderRuns(k_positions, max_runs, k_sorted);
  if (!q_runs || !k_runs) return std::nullopt;
  if (IsIdentity(*q_runs) && IsIdentity(*k_runs)) return std::nullopt;
  auto pieces = SplitIntoPieces(q_sorted, k_sorted, mask, doc_starts, max_pieces);
  if (!pieces) return std::nullopt;
  return OrderedSplit{std::move(*q_runs), std::move(*k_runs), std::move(*pieces)};
}

}  // namespace meshplan::exec
