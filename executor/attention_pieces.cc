#include "executor/attention_pieces.h"

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

// Causal pieces of one run pair. Query row i (from q.row0) sees key row j (from k.row0) iff
// k.first + j <= q.first + i, i.e. j <= i + c with c = q.first - k.first.
void CausalPieces(const Run& q, const Run& k, std::vector<AttentionPiece>& out) {
  const int64_t n = q.rows, m = k.rows;
  int64_t c = q.first - k.first;
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
  if (rows > tri_rows) out.push_back({q.row0 + skip + tri_rows, rows - tri_rows, k.row0, m, PieceMask::kFull});
}

}  // namespace

std::optional<std::vector<AttentionPiece>> SplitIntoPieces(const std::vector<int64_t>& q_positions,
                                                           const std::vector<int64_t>& k_positions,
                                                           int32_t mask_kind, int32_t max_pieces) {
  if (mask_kind != 0 && mask_kind != 1) return std::nullopt;
  std::vector<AttentionPiece> pieces;
  const int64_t n = static_cast<int64_t>(q_positions.size()), m = static_cast<int64_t>(k_positions.size());
  if (mask_kind == 0) {  // every pair visible: positions do not matter, the block is one rectangle
    if (n > 0 && m > 0) pieces.push_back({0, n, 0, m, PieceMask::kFull});
    return pieces;
  }
  const auto q_runs = Runs(q_positions, max_pieces);
  const auto k_runs = Runs(k_positions, max_pieces);
  if (!q_runs || !k_runs) return std::nullopt;
  for (const Run& q : *q_runs) {
    for (const Run& k : *k_runs) {
      const size_t before = pieces.size();
      CausalPieces(q, k, pieces);
      // A full piece over the same query rows as the previous one, on the key rows right after
      // it, extends it: full rectangles need adjacent rows, not consecutive positions (gathered
      // keys of zigzag shards give many such runs).
      if (pieces.size() == before + 1 && before > 0) {
        AttentionPiece& prev = pieces[before - 1];
        const AttentionPiece& cur = pieces[before];
        if (prev.mask == PieceMask::kFull && cur.mask == PieceMask::kFull && prev.q_row0 == cur.q_row0 &&
            prev.q_rows == cur.q_rows && prev.k_row0 + prev.k_rows == cur.k_row0) {
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
