#include "core/sequence/layout.h"

#include <algorithm>
#include <utility>

namespace meshplan {

std::string_view LayoutName(Layout layout) {
  switch (layout) {
    case Layout::kContiguous:
      return "contiguous";
    case Layout::kZigzag:
      return "zigzag";
    case Layout::kStriped:
      return "striped";
    case Layout::kBalanced:
      return "balanced";
    case Layout::kDocZigzag:
      return "doc-zigzag";
  }
  return "contiguous";
}

Result<Layout> ParseLayout(std::string_view text) {
  for (Layout l : {Layout::kContiguous, Layout::kZigzag, Layout::kStriped, Layout::kBalanced,
                   Layout::kDocZigzag}) {
    if (text == LayoutName(l)) return l;
  }
  return Status::Invalid("unknown layout '" + std::string(text) +
                         "' (expected contiguous, zigzag, striped, balanced or doc-zigzag)");
}

namespace {

// Doc-zigzag's conditions: a document mask, its documents known, each a multiple of 2N x U (its
// 2N chunks cut into U sub-shards), as TransformerEngine's thd_partition_indices_kernel asserts
// (transformer_engine/common/fused_attn/context_parallel.cu, d0067d0) and data pipelines pad to.
Status ValidateDocZigzag(const ShardLayout& layout, const Mask& mask) {
  if (!mask.IsDocuments()) {
    return Status::Invalid(
        "the doc-zigzag layout (each document in 2 x CP chunks, TransformerEngine's THD format) "
        "needs a document mask (docs:, docs-full:, docs-sampled: or docs-full-sampled:)");
  }
  if (layout.documents == nullptr) {
    return Status::Invalid(
        "the doc-zigzag layout has no documents here (the scheme did not "
        "give it the mask's)");
  }
  const int64_t unit = 2 * layout.num_shards * layout.subdivide;
  int64_t start = 0;
  for (size_t d = 0; d < layout.documents->size(); ++d) {
    const int64_t length = (*layout.documents)[d];
    if (length % unit != 0) {
      return Status::Invalid(
          "the doc-zigzag layout (TransformerEngine's THD format) splits each document in 2 x " +
          std::to_string(layout.num_shards) + " chunks" +
          (layout.subdivide > 1 ? " of " + std::to_string(layout.subdivide) + " sub-shards" : "") +
          ", so every document must be a multiple of " + std::to_string(unit) +
          " tokens; document " + std::to_string(d + 1) + " (tokens " + std::to_string(start) +
          "..) has " + std::to_string(length) +
          " (frameworks pad each document to that multiple; docs-sampled:...:align=" +
          std::to_string(unit) + " draws documents so padded)");
    }
    start += length;
  }
  if (start != layout.seq_len) {
    return Status::Invalid("the doc-zigzag layout's documents cover " + std::to_string(start) +
                           " tokens, not the sequence's " + std::to_string(layout.seq_len));
  }
  return Status::Ok();
}

// Calls f(start, c) for each document: its first token and its chunk length (length / 2N).
template <typename F>
void ForEachDocumentChunk(const ShardLayout& layout, F f) {
  if (layout.documents == nullptr) return;
  int64_t start = 0;
  for (int64_t length : *layout.documents) {
    f(start, length / (2 * layout.num_shards));
    start += length;
  }
}

}  // namespace

Status ShardLayout::Validate(const Mask& mask) const {
  if (num_shards < 1 || subdivide < 1) return Status::Invalid("layout needs at least one shard");
  if (kind == Layout::kDocZigzag) return ValidateDocZigzag(*this, mask);
  const int64_t pieces = RangesPerShard() * num_shards;
  const int64_t unit = pieces * subdivide;
  if (seq_len % unit != 0) {
    const int64_t below = seq_len / unit * unit, above = below + unit;
    return Status::Invalid(
        "sequence length " + std::to_string(seq_len) + " is not divisible by " +
        std::to_string(unit) + " (" + std::string(LayoutName(kind)) +
        " layout: " + std::to_string(pieces) + " chunks x " + std::to_string(subdivide) +
        " sub-shards); nearest multiples: " + (below > 0 ? std::to_string(below) + " and " : "") +
        std::to_string(above));
  }
  if (kind == Layout::kStriped && mask.kind != MaskKind::kFull && mask.kind != MaskKind::kCausal) {
    return Status::Invalid("the striped layout supports only full and causal masks");
  }
  if (kind == Layout::kBalanced && balanced == nullptr) {
    return Status::Invalid(
        "the balanced layout (load-balanced dispatch) has no chunk map here: the scheme "
        "did not make one, or its chunks do not divide into the sub-shards");
  }
  return Status::Ok();
}

DocZigzagSums ShardLayout::DocSums() const {
  if (doc_sums != nullptr) return *doc_sums;
  DocZigzagSums sums;
  ForEachDocumentChunk(*this, [&](int64_t, int64_t c) {
    sums.chunk_squares += c * c;
    sums.chunks += c;
    sums.cut_rows += 2 * std::max<int64_t>(c - 1, 0);
  });
  return sums;
}

void AttachDocuments(ShardLayout* layout, std::shared_ptr<const std::vector<int64_t>> documents) {
  layout->documents = std::move(documents);
  layout->doc_sums = nullptr;
  layout->doc_sums = std::make_shared<const DocZigzagSums>(layout->DocSums());
}

BlockWorkSymmetry WorkSymmetry(const ShardLayout& layout, const Mask& mask) {
  const bool doc_zigzag = layout.kind == Layout::kDocZigzag;
  switch (mask.kind) {
    case MaskKind::kFull:
      // Every pair is visible and no row is cut: a block's work is the product of its shards'
      // token counts, equal for every shard once Validate holds (the sequence divides into the
      // layout's equal chunks; a balanced shard holds kBalancedChunksPerShard of them).
      return doc_zigzag ? BlockWorkSymmetry::kNone : BlockWorkSymmetry::kUniform;
    case MaskKind::kDocumentsFull:
      // Doc-zigzag: each document of length 2Nc gives every shard two chunks of c tokens that see
      // the whole document, so every block holds sum (2c)^2 pairs, none cut.
      return doc_zigzag ? BlockWorkSymmetry::kUniform : BlockWorkSymmetry::kNone;
    case MaskKind::kCausal:
    case MaskKind::kDocuments: {
      // Zigzag over the sequence (or over each document, doc-zigzag), chunk c: shard i holds
      // chunks i and 2N-1-i. For i != j, of its four chunk pairs (i, j) is visible whole iff
      // i > j, (2N-1-i, 2N-1-j) iff j > i, (2N-1-i, j) always (2N-1-i >= N > j) and (i, 2N-1-j)
      // never: two whole chunk pairs, 2c^2 pairs, no cut row, whatever i and j. For i == j:
      // two causal chunks and one whole pair, 2c^2 + c pairs, 2(c - 1) cut rows, whatever i.
      const bool zigzag =
          mask.kind == MaskKind::kCausal ? layout.kind == Layout::kZigzag : doc_zigzag;
      return zigzag ? BlockWorkSymmetry::kDiagonal : BlockWorkSymmetry::kNone;
    }
    case MaskKind::kWindow:
    case MaskKind::kPrefix:
      break;
  }
  return BlockWorkSymmetry::kNone;
}

ShardLayout MakeShardLayout(Layout kind, const PairCounter& counter, int64_t shards,
                            int64_t subdivide) {
  ShardLayout layout{kind, counter.seq_len(), shards, subdivide};
  const int64_t unit = shards * kBalancedChunksPerShard * subdivide;
  if (kind == Layout::kBalanced && shards >= 1 && subdivide >= 1 && counter.seq_len() % unit == 0) {
    layout.balanced = BalanceChunks(counter, shards, kBalancedChunksPerShard);
  }
  if (kind == Layout::kDocZigzag && counter.mask().IsDocuments()) {
    AttachDocuments(&layout,
                    std::make_shared<const std::vector<int64_t>>(counter.mask().document_lengths));
  }
  return layout;
}

std::vector<TokenRange> ShardLayout::Ranges(int64_t shard) const {
  if (kind == Layout::kDocZigzag) {
    std::vector<TokenRange> out;
    out.reserve(documents ? 2 * documents->size() : 0);
    const int64_t other = 2 * num_shards - 1 - shard;
    ForEachDocumentChunk(*this, [&](int64_t start, int64_t c) {
      out.push_back({start + shard * c, start + (shard + 1) * c});
      out.push_back({start + other * c, start + (other + 1) * c});
    });
    return out;
  }
  if (kind == Layout::kBalanced) {
    const int64_t k = balanced->chunks_per_shard, c = balanced->chunk_tokens;
    std::vector<TokenRange> out;
    out.reserve(static_cast<size_t>(k));
    for (int64_t i = shard * k; i < (shard + 1) * k; ++i) {
      const int64_t x = balanced->chunks_of_shard[i];
      out.push_back({x * c, (x + 1) * c});
    }
    return out;
  }
  if (kind == Layout::kZigzag) {
    const int64_t c = seq_len / (2 * num_shards);
    const int64_t other = 2 * num_shards - 1 - shard;
    return {{shard * c, (shard + 1) * c}, {other * c, (other + 1) * c}};
  }
  const int64_t n = seq_len / num_shards;
  return {{shard * n, (shard + 1) * n}};
}

std::vector<TokenRange> ShardLayout::SubRanges(int64_t sub) const {
  const int64_t shard = sub / subdivide, part = sub % subdivide;
  std::vector<TokenRange> out;
  for (const TokenRange& r : Ranges(shard)) {
    const int64_t piece = r.size() / subdivide;
    out.push_back({r.begin + part * piece, r.begin + (part + 1) * piece});
  }
  return out;
}

int64_t ShardLayout::RangesPerShard() const {
  if (kind == Layout::kZigzag) return 2;
  if (kind == Layout::kDocZigzag)
    return documents ? 2 * static_cast<int64_t>(documents->size()) : 2;
  return kind == Layout::kBalanced ? kBalancedChunksPerShard : 1;
}

int64_t ShardLayout::LaunchesPerBlock() const {
  return kind == Layout::kDocZigzag ? 1 : RangesPerShard();
}

int64_t ShardLayout::KernelBlockTokens() const {
  if (kind == Layout::kDocZigzag) {
    double pairs = 0, weighted = 0;  // sum c^2, sum c^3
    ForEachDocumentChunk(*this, [&](int64_t, int64_t c) {
      const double x = static_cast<double>(c);
      pairs += x * x;
      weighted += x * x * x;
    });
    return pairs > 0 ? std::max<int64_t>(1, static_cast<int64_t>(weighted / pairs + 0.5)) : 1;
  }
  if (kind == Layout::kZigzag) return seq_len / (2 * num_shards);
  if (kind == Layout::kBalanced) return seq_len / (kBalancedChunksPerShard * num_shards);
  return seq_len / num_shards;
}

double BlockWork::CutRowsPerPair() const {
  return pairs > 0 ? static_cast<double>(cut_rows) / static_cast<double>(pairs) : 0.0;
}

void AddRectangleWork(const PairCounter& counter, TokenRange q, TokenRange k, BlockWork* work) {
  const int64_t pairs = counter.Count(q.begin, q.end, k.begin, k.end);
  work->pairs += pairs;
  if (pairs > 0 && pairs < q.size() * k.size())
    work->cut_rows += counter.CutRows(q.begin, q.end, k.begin, k.end);
}

int64_t ShardLayout::BlockPairs(const PairCounter& counter, int64_t q_shard,
                                int64_t kv_shard) const {
  return Work(counter, q_shard, kv_shard).pairs;
}

BlockWork ShardLayout::Work(const PairCounter& counter, int64_t q_shard, int64_t kv_shard) const {
  BlockWork work;
  if (kind == Layout::kDocZigzag) {
    // A document mask sees nothing across documents, and every block holds each document's four
    // chunk pairs: closed forms (DocZigzagSums; compute_model.cc derives them).
    const DocZigzagSums sums = DocSums();
    const bool diagonal = q_shard == kv_shard;
    if (counter.mask().kind == MaskKind::kDocuments) {
      work.pairs = 2 * sums.chunk_squares + (diagonal ? sums.chunks : 0);
      work.cut_rows = diagonal ? sums.cut_rows : 0;
    } else {
      work.pairs = 4 * sums.chunk_squares;
    }
    return work;
  }
  if (kind == Layout::kStriped) {
    // q = i + N*m, k = j + N*l with m, l in [0, n). Full: n^2. Causal: k <= q iff l < m, or
    // l == m and j <= i: n(n-1)/2 + (j <= i ? n : 0). Row m sees m keys (m + 1 when j <= i): every
    // row is cut but the one that sees none (m = 0, j > i) or all (m = n - 1, j <= i): n - 1.
    const int64_t n = seq_len / num_shards;
    if (counter.mask().kind == MaskKind::kFull) {
      work.pairs = n * n;
    } else {
      work.pairs = n * (n - 1) / 2 + (kv_shard <= q_shard ? n : 0);
      work.cut_rows = n - 1;
    }
    return work;
  }
  for (const TokenRange& q : Ranges(q_shard)) {
    for (const TokenRange& k : Ranges(kv_shard)) AddRectangleWork(counter, q, k, &work);
  }
  return work;
}

}  // namespace meshplan
