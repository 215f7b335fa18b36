#include "planner/compute_model.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

namespace meshplan::planner {
namespace {

int64_t ChunkTokens(const ShardLayout& layout) {
  return layout.seq_len / (layout.RangesPerShard() * layout.num_shards);
}

// Shard that owns chunk x (contiguous: x itself; zigzag: x or its mirror; balanced: its owner).
int64_t ShardOfChunk(const ShardLayout& layout, int64_t x) {
  if (layout.kind == Layout::kBalanced) return layout.balanced->owner[x];
  if (layout.kind != Layout::kZigzag) return x;
  return x < layout.num_shards ? x : 2 * layout.num_shards - 1 - x;
}

// The keys a query at `q` sees within a sequence of `seq_len`: the one mask rule's range
// (core/sequence/mask_rule.h VisibleKeys, which the kernels use too; it handles every MaskKind in a
// switch without a default, so a kind it does not know fails to build: -Werror=switch), clamped to
// the sequence. doc_starts: DocStarts(mask).
VisibleKeyRange ReachableKeys(const Mask& mask, const std::vector<int64_t>& doc_starts,
                              int64_t seq_len, int64_t q) {
  int64_t doc_first = 0, doc_last = 0;
  if (HasDocuments(mask.kind)) {
    const auto it = std::upper_bound(doc_starts.begin(), doc_starts.end(), q);
    doc_first = *(it - 1);
    doc_last = *it - 1;
  }
  const VisibleKeyRange keys = VisibleKeys(mask.Params(), q, doc_first, doc_last);
  return {std::max<int64_t>(keys.first, 0), std::min(keys.last, seq_len - 1)};
}

// Sum over y in [0, x_end) of min(b, floor(y / a) + 1): y's within one multiple of a share a
// value, so whole groups of a contribute a * min(b, k + 1) for k = 0 .. full - 1.
int64_t GroupPrefix(int64_t x_end, int64_t a, int64_t b) {
  if (x_end <= 0) return 0;
  const int64_t full = x_end / a, rem = x_end % a;
  const int64_t ramp = std::min(full, b);  // groups k < b count k + 1, later ones b
  const int64_t groups = ramp * (ramp + 1) / 2 + (full - ramp) * b;
  return a * groups + rem * std::min(b, full + 1);
}

// The documents' starts followed by the sequence length (empty for other masks).
std::vector<int64_t> DocStarts(const Mask& mask) {
  std::vector<int64_t> doc_starts;
  if (!mask.IsDocuments()) return doc_starts;
  int64_t start = 0;
  for (int64_t length : mask.document_lengths) {
    doc_starts.push_back(start);
    start += length;
  }
  doc_starts.push_back(start);
  return doc_starts;
}

// The chunks a query range [q.begin, q.end) can see only in part lie where its rows' first
// reachable keys fall (zone 1) or their last ones (zone 2): both ends grow with the row, and every
// mask here shows a row one interval of keys. Chunks between the zones are seen whole by every
// row, the others not at all. Calls partial(x) once for each chunk of the zones (overlaps merged)
// and returns the [lo, hi] chunks between them ({1, 0}: none).
template <typename F>
std::pair<int64_t, int64_t> ForEachPartialChunk(const Mask& mask,
                                                const std::vector<int64_t>& doc_starts,
                                                int64_t seq_len, int64_t chunk, const TokenRange& q,
                                                F partial) {
  const VisibleKeyRange first_row = ReachableKeys(mask, doc_starts, seq_len, q.begin);
  const VisibleKeyRange last_row = ReachableKeys(mask, doc_starts, seq_len, q.end - 1);
  const int64_t zones[2][2] = {{first_row.first / chunk, last_row.first / chunk},
                               {first_row.last / chunk, last_row.last / chunk}};
  int64_t next = 0;  // first chunk not yet visited (the zones may overlap)
  for (const auto& zone : zones) {
    for (int64_t x = std::max(zone[0], next); x <= zone[1]; ++x) partial(x);
    next = std::max(next, zone[1] + 1);
  }
  return {zones[0][1] + 1, zones[1][0] - 1};
}

// Adds w for every shard of a range to the count of its KV group (shard mod a), in O(1) per
// range: each group gets w x floor(L / a) and the L mod a groups from lo mod a on (cyclically) w
// more, kept as a difference array until FlushInto.
class ResidueAdder {
 public:
  explicit ResidueAdder(int64_t a) : a_(a), diff_(static_cast<size_t>(a) + 1, 0) {}
  // Shards lo..hi.
  void AddShards(int64_t lo, int64_t hi, int64_t w) {
    if (hi < lo) return;
    const int64_t length = hi - lo + 1;
    all_ += (length / a_) * w;
    const int64_t rem = length % a_, start = lo % a_;
    if (rem == 0) return;
    diff_[static_cast<size_t>(start)] += w;
    if (start + rem <= a_) {
      diff_[static_cast<size_t>(start + rem)] -= w;
    } else {
      diff_[static_cast<size_t>(a_)] -= w;
      diff_[0] += w;
      diff_[static_cast<size_t>(start + rem - a_)] -= w;
    }
  }
  // Adds every group's total to counts[r] (r < a) and starts over.
  void FlushInto(int64_t* counts) {
    int64_t running = 0;
    for (int64_t r = 0; r < a_; ++r) {
      running += diff_[static_cast<size_t>(r)];
      counts[r] += all_ + running;
    }
    std::fill(diff_.begin(), diff_.end(), 0);
    all_ = 0;
  }

 private:
  int64_t a_;
  std::vector<int64_t> diff_;
  int64_t all_ = 0;
};

// Doc-zigzag (core/sequence/layout.h): shard i holds chunks i and 2N-1-i of every document, so a
// block (i, j) holds each document's four chunk pairs and nothing across documents. With chunk
// length c, chunk x against y has c^2 pairs below the diagonal (y < x), c(c+1)/2 on it, none
// above, for a causal document: off-diagonal blocks (i != j) get i's late chunk against j's early
// one (c^2) and exactly one of early-early (j < i) or late-late (j > i) (c^2): 2c^2; a diagonal
// block both own chunks' triangles and late-early: 2c^2 + c. Bidirectional documents: 4c^2
// everywhere. Cut rows: a chunk against itself under a causal mask, c - 1 rows, twice in a
// diagonal block; none elsewhere (ShardLayout::Work and DocZigzagSums).

// Calls f(q) for every contiguous query range of rank g's Q shards in the 2-D assignment with
// Q-group size a (shards [a floor(g / a), + a)).
template <typename F>
void ForEachTileQueryRange(const ShardLayout& layout, int64_t a, int64_t g, F f) {
  const int64_t base = a * (g / a);
  for (int64_t i = base; i < base + a; ++i) {
    for (const TokenRange& q : layout.Ranges(i)) f(q);
  }
}

}  // namespace

std::vector<int64_t> RowPairs(const ShardLayout& layout, const PairCounter& counter) {
  const int64_t n_shards = layout.num_shards;
  std::vector<int64_t> out(n_shards, 0);
  if (layout.kind == Layout::kStriped) {
    // Sum over kv shards j of the striped block counts (layout.h): full n^2 each;
    // causal n(n-1)/2 + (j <= i ? n : 0), i.e. N*n(n-1)/2 + (i+1)*n.
    const int64_t n = layout.seq_len / n_shards;
    for (int64_t i = 0; i < n_shards; ++i) {
      out[i] = counter.mask().kind == MaskKind::kFull ? n_shards * n * n
                                                      : n_shards * (n * (n - 1) / 2) + (i + 1) * n;
    }
    return out;
  }
  if (layout.kind == Layout::kDocZigzag) {
    // N blocks a shard, one of them diagonal (the block forms above).
    const DocZigzagSums sums = layout.DocSums();
    std::fill(out.begin(), out.end(),
              counter.mask().kind == MaskKind::kDocuments
                  ? 2 * sums.chunk_squares * n_shards + sums.chunks
                  : 4 * sums.chunk_squares * n_shards);
    return out;
  }
  for (int64_t i = 0; i < n_shards; ++i) {
    for (const TokenRange& r : layout.Ranges(i))
      out[i] += counter.Count(r.begin, r.end, 0, layout.seq_len);
  }
  return out;
}

std::vector<int64_t> TilePairs(const ShardLayout& layout, const PairCounter& counter, int64_t a) {
  const int64_t n_ranks = layout.num_shards;
  const int64_t b = n_ranks / a;
  const Mask& mask = counter.mask();
  std::vector<int64_t> out(n_ranks, 0);
  if (layout.kind == Layout::kDocZigzag) {
    // a x b blocks a rank, exactly one of them diagonal (TileCutRows says why).
    const DocZigzagSums sums = layout.DocSums();
    const bool causal = mask.kind == MaskKind::kDocuments;
    std::fill(
        out.begin(), out.end(),
        causal ? 2 * sums.chunk_squares * a * b + sums.chunks : 4 * sums.chunk_squares * a * b);
    return out;
  }
  if (mask.kind == MaskKind::kFull) {
    const int64_t n = layout.seq_len / n_ranks;
    std::fill(out.begin(), out.end(), a * b * n * n);
    return out;
  }
  if (mask.kind == MaskKind::kCausal && layout.kind != Layout::kBalanced) {
    if (layout.kind == Layout::kZigzag) {
      // Off-diagonal zigzag blocks have 2c^2 pairs, diagonal ones 2c^2 + c (layout_test derives
      // this); a rank's Q and KV groups share exactly one shard (its own).
      const int64_t c = layout.seq_len / (2 * n_ranks);
      std::fill(out.begin(), out.end(), 2 * c * c * a * b + c);
      return out;
    }
    const int64_t n = layout.seq_len / n_ranks;
    for (int64_t g = 0; g < n_ranks; ++g) {
      const int64_t base = a * (g / a), r = g % a;
      // Shard pairs (i, j) of the tile, i in [base, base + a) (Q), j = r + a k for k < b (KV),
      // with j < i and j <= i. For one i with x = i - r: min(b, ceil(x / a)) of them below
      // (x > 0) and min(b, floor(x / a) + 1) at or below (x >= 0); ceil(x / a) = floor((x - 1)
      // / a) + 1, so both are GroupPrefix differences over x in [base - r, base - r + a - 1]:
      // O(1) per rank where summing over i cost O(a) (O(P^2) per tile shape at a = P).
      const int64_t x_lo = base - r, x_hi = base - r + a - 1;
      const int64_t below =
          GroupPrefix(x_hi, a, b) - GroupPrefix(std::max<int64_t>(0, x_lo - 1), a, b);
      const int64_t at_or_below =
          GroupPrefix(x_hi + 1, a, b) - GroupPrefix(std::max<int64_t>(0, x_lo), a, b);
      const int64_t diagonal = at_or_below - below;
      if (layout.kind == Layout::kStriped) {
        out[g] = a * b * (n * (n - 1) / 2) + at_or_below * n;
      } else {
        out[g] = below * n * n + diagonal * (n * (n + 1) / 2);
      }
    }
    return out;
  }
  // Window, documents and prefix (contiguous, zigzag or balanced), and causal balanced: the key
  // chunks a query range sees in part are counted pair by pair, those it sees whole by their
  // number (ForEachPartialChunk), so a range costs its partial chunks, not every reachable one.
  // The a ranks of one Q group (base + r, r < a) share its query ranges: each range is walked
  // once for the group and each chunk credited to the rank whose KV group holds it.
  const std::vector<int64_t> doc_starts = DocStarts(mask);
  const int64_t chunk = ChunkTokens(layout);
  ResidueAdder whole(a);  // the chunks seen whole, by KV group, for one Q group at a time
  for (int64_t base = 0; base < n_ranks; base += a) {
    int64_t* tile = &out[static_cast<size_t>(base)];  // tile[r]: rank base + r
    ForEachTileQueryRange(layout, a, base, [&](const TokenRange& q) {
      const auto [lo, hi] =
          ForEachPartialChunk(mask, doc_starts, layout.seq_len, chunk, q, [&](int64_t x) {
            tile[ShardOfChunk(layout, x) % a] +=
                counter.Count(q.begin, q.end, x * chunk, (x + 1) * chunk);
          });
      // Chunks seen whole add the range's rows times a chunk, to the rank whose group holds them.
      if (hi < lo) return;
      const int64_t w = q.size() * chunk;
      if (layout.kind == Layout::kBalanced || hi - lo + 1 <= a) {
        for (int64_t x = lo; x <= hi; ++x) tile[ShardOfChunk(layout, x) % a] += w;
      } else if (layout.kind == Layout::kZigzag) {
        // Chunk x is shard x in front, shard 2N - 1 - x past the middle (core/sequence/layout.h).
        const int64_t shards = layout.num_shards;
        if (lo <= shards - 1) whole.AddShards(lo, std::min(hi, shards - 1), w);
        if (hi >= shards)
          whole.AddShards(2 * shards - 1 - hi, 2 * shards - 1 - std::max(lo, shards), w);
      } else {
        whole.AddShards(lo, hi, w);  // contiguous: chunk x is shard x
      }
    });
    whole.FlushInto(tile);
  }
  return out;
}

std::vector<int64_t> TileCutRows(const ShardLayout& layout, const PairCounter& counter, int64_t a) {
  const int64_t n_ranks = layout.num_shards;
  const int64_t b = n_ranks / a;
  const Mask& mask = counter.mask();
  std::vector<int64_t> out(n_ranks, 0);
  if (mask.kind == MaskKind::kFull) return out;  // no block is cut
  if (layout.kind == Layout::kDocZigzag) {
    if (mask.kind == MaskKind::kDocuments)
      std::fill(out.begin(), out.end(), layout.DocSums().cut_rows);
    return out;
  }
  if (mask.kind == MaskKind::kCausal && layout.kind != Layout::kBalanced) {
    // Every striped block is cut along its diagonal (n - 1 rows, core/sequence/layout.h). Otherwise
    // only a diagonal block (q shard = kv shard) is cut, and each rank's tile holds exactly one:
    // its Q shards [base, base + a) meet its KV shards r + a k (k < b) only at base + r (k = g / a
    // < b). Contiguous: n - 1 cut rows; zigzag: its chunks are aligned, so only each of the two
    // chunks against itself is cut, c - 1 rows each (c = n / 2).
    const int64_t n = layout.seq_len / n_ranks;
    const int64_t per_rank = layout.kind == Layout::kStriped  ? a * b * (n - 1)
                             : layout.kind == Layout::kZigzag ? 2 * (n / 2 - 1)
                                                              : n - 1;
    std::fill(out.begin(), out.end(), per_rank);
    return out;
  }
  // As TilePairs: each Q group's ranges walked once, each cut chunk credited to its KV group's
  // rank.
  const std::vector<int64_t> doc_starts = DocStarts(mask);
  const int64_t chunk = ChunkTokens(layout);
  for (int64_t base = 0; base < n_ranks; base += a) {
    int64_t* tile = &out[static_cast<size_t>(base)];
    ForEachTileQueryRange(layout, a, base, [&](const TokenRange& q) {
      // Only chunks seen in part can be cut.
      ForEachPartialChunk(mask, doc_starts, layout.seq_len, chunk, q, [&](int64_t x) {
        BlockWork work;
        AddRectangleWork(counter, q, TokenRange{x * chunk, (x + 1) * chunk}, &work);
        tile[ShardOfChunk(layout, x) % a] += work.cut_rows;
      });
    });
  }
  return out;
}

ShardIntervals NonemptyKvShards(const ShardLayout& layout, const PairCounter& counter) {
  const int64_t n = layout.num_shards;
  ShardIntervals nonempty(static_cast<size_t>(std::max<int64_t>(n, 0)));
  if (layout.kind == Layout::kDocZigzag) {
    // Every block holds a document's late chunk against another shard's early one.
    for (auto& shards : nonempty) shards.push_back({0, n - 1});
    return nonempty;
  }
  if (layout.kind == Layout::kStriped) {
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        if (layout.Work(counter, i, j).pairs == 0) continue;
        if (!nonempty[i].empty() && nonempty[i].back().second == j - 1) {
          nonempty[i].back().second = j;
        } else {
          nonempty[i].push_back({j, j});
        }
      }
    }
  } else {
    const Mask& mask = counter.mask();
    const std::vector<int64_t> doc_starts = DocStarts(mask);
    const int64_t chunk = ChunkTokens(layout);
    std::vector<std::pair<int64_t, int64_t>> shards;  // intervals of KV shards, unsorted
    // The shards of chunks [lo, hi] (contiguous: chunk x is shard x; zigzag: x in front, its
    // mirror 2n - 1 - x past the middle).
    auto add_chunks = [&](int64_t lo, int64_t hi) {
      if (hi < lo) return;
      if (layout.kind == Layout::kZigzag) {
        if (lo <= n - 1) shards.push_back({lo, std::min(hi, n - 1)});
        if (hi >= n) shards.push_back({2 * n - 1 - hi, 2 * n - 1 - std::max(lo, n)});
      } else {
        shards.push_back({lo, hi});
      }
    };
    // Balanced: a range of chunks maps to scattered shards; they are marked instead (stopping
    // once every shard is), so a long range costs at most the chunks until all are seen.
    std::vector<char> marked;
    for (int64_t i = 0; i < n; ++i) {
      shards.clear();
      if (layout.kind == Layout::kBalanced) {
        marked.assign(static_cast<size_t>(n), 0);
        int64_t seen = 0;
        auto mark = [&](int64_t x) {
          char& m = marked[static_cast<size_t>(ShardOfChunk(layout, x))];
          seen += m == 0 ? 1 : 0;
          m = 1;
        };
        for (const TokenRange& q : layout.Ranges(i)) {
          const auto [lo, hi] =
              ForEachPartialChunk(mask, doc_starts, layout.seq_len, chunk, q, [&](int64_t x) {
                if (seen < n && counter.Count(q.begin, q.end, x * chunk, (x + 1) * chunk) > 0)
                  mark(x);
              });
          for (int64_t x = lo; x <= hi && seen < n; ++x) mark(x);
        }
        for (int64_t j = 0; j < n; ++j) {
          if (marked[static_cast<size_t>(j)] == 0) continue;
          if (!nonempty[i].empty() && nonempty[i].back().second == j - 1) {
            nonempty[i].back().second = j;
          } else {
            nonempty[i].push_back({j, j});
          }
        }
        continue;
      }
      for (const TokenRange& q : layout.Ranges(i)) {
        const auto [lo, hi] =
            ForEachPartialChunk(mask, doc_starts, layout.seq_len, chunk, q, [&](int64_t x) {
              if (counter.Count(q.begin, q.end, x * chunk, (x + 1) * chunk) > 0) add_chunks(x, x);
            });
        add_chunks(lo, hi);
      }
      std::sort(shards.begin(), shards.end());
      for (const auto& [first, last] : shards) {
        if (!nonempty[i].empty() && first <= nonempty[i].back().second + 1) {
          nonempty[i].back().second = std::max(nonempty[i].back().second, last);
        } else {
          nonempty[i].push_back({first, last});
        }
      }
    }
  }
  return nonempty;
}

std::optional<std::vector<int64_t>> TileMergedBlocksClosedForm(const ShardLayout& layout,
                                                               const PairCounter& counter,
                                                               int64_t a) {
  const int64_t n = layout.num_shards;
  std::vector<int64_t> out(static_cast<size_t>(std::max<int64_t>(n, 0)), 0);
  if (n <= 0 || a <= 0 || n % a != 0) return out;
  // Closed forms (the search's common case; the general enumeration below is O(n a) per tile
  // and, striped, O(n^2)). Rank g holds Q shards [a k, a k + a) (k = g / a) and KV shards
  // j = r (mod a) (r = g % a), b = n / a of them.
  const MaskKind kind = counter.mask().kind;
  const int64_t tokens_per_shard = layout.shard_tokens();
  const bool every_block =
      kind == MaskKind::kFull || layout.kind == Layout::kDocZigzag ||
      (kind == MaskKind::kCausal && layout.kind == Layout::kZigzag) ||
      (kind == MaskKind::kCausal && layout.kind == Layout::kStriped && tokens_per_shard >= 2);
  if (every_block) {
    // Every block has pairs: a full mask; doc-zigzag (each document's late chunk in one shard sees
    // its early chunk in every other); a causal zigzag shard's late chunk sees every earlier
    // chunk, so every KV shard; a causal striped shard's last token (i + n (T - 1), T >= 2) sees
    // every KV shard's first. a Q shards, b blocks each, b - 1 merges each.
    std::fill(out.begin(), out.end(), a * (n / a - 1));
    return out;
  }
  if (kind == MaskKind::kCausal && (layout.kind == Layout::kContiguous ||
                                    (layout.kind == Layout::kStriped && tokens_per_shard == 1))) {
    // Q shard i = a k + t meets the KV shards j <= i: for j = r (mod a) that is k + 1 of them when
    // t >= r, k when t < r (none when k = 0 and t < r). Its merges, one fewer, summed over t in
    // [0, a): (a - r) k + r (k - 1) = a k - r for k >= 1; 0 for k = 0.
    for (int64_t g = 0; g < n; ++g) {
      const int64_t k = g / a, r = g % a;
      out[g] = k >= 1 ? a * k - r : 0;
    }
    return out;
  }
  return std::nullopt;
}

std::vector<int64_t> TileMergedBlocksFrom(const ShardIntervals& nonempty, int64_t a) {
  const int64_t n = static_cast<int64_t>(nonempty.size());
  std::vector<int64_t> out(static_cast<size_t>(n), 0);
  if (n <= 0 || a <= 0 || n % a != 0) return out;
  // Rank g = base + r holds Q shards [base, base + a) and the KV shards j = r (mod a). Q shard i
  // meets c(i, r) of them with pairs and merges max(0, c - 1) = c - [c >= 1]: per Q group, the
  // counts c by residue through one difference array (every interval in O(1)) and the residues
  // covered at all through another (the union of the intervals' residue ranges), O(n + ranges)
  // per tile shape instead of O(n a).
  ResidueAdder counts(a), covered(a);
  std::vector<int64_t> count_r(static_cast<size_t>(a)), covered_r(static_cast<size_t>(a));
  std::vector<std::pair<int64_t, int64_t>> segments;
  for (int64_t base = 0; base < n; base += a) {
    std::fill(count_r.begin(), count_r.end(), 0);
    std::fill(covered_r.begin(), covered_r.end(), 0);
    for (int64_t i = base; i < base + a; ++i) {
      segments.clear();
      bool every_residue = false;
      for (const auto& [first, last] : nonempty[i]) {
        counts.AddShards(first, last, 1);
        if (last - first + 1 >= a) {
          every_residue = true;
          continue;
        }
        const int64_t s = first % a, e = last % a;
        if (s <= e) {
          segments.push_back({s, e});
        } else {
          segments.push_back({s, a - 1});
          segments.push_back({0, e});
        }
      }
      if (every_residue) {
        covered.AddShards(0, a - 1, 1);
        continue;
      }
      std::sort(segments.begin(), segments.end());
      int64_t open_s = -1, open_e = -2;
      for (const auto& [s, e] : segments) {
        if (s > open_e + 1) {
          if (open_s >= 0) covered.AddShards(open_s, open_e, 1);
          open_s = s;
          open_e = e;
        } else {
          open_e = std::max(open_e, e);
        }
      }
      if (open_s >= 0) covered.AddShards(open_s, open_e, 1);
    }
    counts.FlushInto(count_r.data());
    covered.FlushInto(covered_r.data());
    for (int64_t r = 0; r < a; ++r) {
      out[static_cast<size_t>(base + r)] =
          count_r[static_cast<size_t>(r)] - covered_r[static_cast<size_t>(r)];
    }
  }
  return out;
}

std::vector<int64_t> TileMergedBlocks(const ShardLayout& layout, const PairCounter& counter,
                                      int64_t a) {
  if (auto closed = TileMergedBlocksClosedForm(layout, counter, a)) return *std::move(closed);
  return TileMergedBlocksFrom(NonemptyKvShards(layout, counter), a);
}

}  // namespace meshplan::planner
