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
// side may be a single row). Key j is visible to query i iff k0 + s j <= q0 + s i, i.e.
// j <= i + floor((q0 - k0) / s): the same triangle-and-rectangle split as consecutive runs, on row
// indices. nullopt when the positions are not such progressions.
std::optional<std::vector<AttentionPiece>> StridedPieces(const std::vector<int64_t>& q_positions,
                                                         const std::vector<int64_t>& k_positions) {
  const auto sq = Stride(q_positions), sk = Stride(k_positions);
  if (!sq || !sk || q_positions.empty() || k_positions.empty()) return std::nullopt;
  if (*sq > 0 && *sk > 0 && *sq != *sk) return std::nullopt;
  const int64_t s = std::max<int64_t>(1, std::max(*sq, *sk));
  const Run q{0, static_cast<int64_t>(q_positions.size()), q_positions.front()};
  const Run k{0, static_cast<int64_t>(k_positions.size()), k_positions.front()};
  std::vector<AttentionPiece> pieces;
  CausalPieces(q, k, FloorDiv(q.first - k.first, s), pieces);
  return pieces;
}

}  // namespace

std::optional<std::vector<AttentionPiece>> SplitIntoPieces(const std::vector<int64_t>& q_positions,
                                                           const std::vector<int64_t>& k_positions,
                                                           MaskKind mask_kind, int32_t max_pieces) {
  if (mask_kind != MaskKind::kFull && mask_kind != MaskKind::kCausal) return std::nullopt;
  std::vector<AttentionPiece> pieces;
  const int64_t n = static_cast<int64_t>(q_positions.size()),
                m = static_cast<int64_t>(k_positions.size());
  // Full: every pair visible, positions do not matter, the block is one rectangle.
  if (mask_kind == MaskKind::kFull) {
    if (n > 0 && m > 0) pieces.push_back({0, n, 0, m, PieceMask::kFull});
    return pieces;
  }
  const auto q_runs = Runs(q_positions, max_pieces);
  const auto k_runs = Runs(k_positions, max_pieces);
  if (!q_runs || !k_runs) {
    // Too many runs of consecutive positions: a striped block, whose rows go up by the stripe
    // step on both sides, is still one or two pieces.
    auto strided = StridedPieces(q_positions, k_positions);
    if (strided && static_cast<int32_t>(strided->size()) <= max_pieces) return strided;
    return std::nullopt;
  }
  for (const Run& q : *q_runs) {
    for (const Run& k : *k_runs) {
      const size_t before = pieces.size();
      CausalPieces(q, k, q.first - k.first, pieces);
      // A full piece over the same query rows as the previous one, on the key rows right after
      // it, extends it: full rectangles need adjacent rows, not consecutive positions (gathered
      // keys of zigzag shards give many such runs).
      if (pieces.size() == before + 1 && before > 0) {
        AttentionPiece& prev = pieces[before - 1];
        const AttentionPiece& cur = pieces[before];
        if (prev.mask == PieceMask::kFull && cur.mask == PieceMask::kFull &&
            prev.q_row0 == cur.q_row0 && prev.q_rows == cur.q_rows &&
            prev.k_row0 + prev.k_rows == cur.k_row0) {
          prev.k_rows += cur.k_rows;
          pieces.pop_back();
        }
      }
      if (static_cast<int32_t>(pieces.size()) > max_pieces) return std::nullopt;
    }
  }
  return pieces;
}

}  // namespace meshplan::exec
