// CudnnAttention over the cuDNN frontend's SDPA graphs (header-only C++ API, cuDNN opened with
// dlopen). See cudnn_attention.h for the contract.
#include "executor/cuda/cudnn_attention.h"

#include <cudnn_frontend.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "executor/cuda/attention_kernels.h"
#include "executor/cuda/cudnn_glue.h"
#include "executor/kernels/attention_pieces.h"

// The frontend's dynamic loading reads the library handle from this variable, which the frontend
// declares and leaves to the program to define (its one global, by its design): set by
// CreateCudnnAttention before any frontend call, never changed after.
namespace cudnn_frontend {
void* cudnn_dlhandle = nullptr;
}

namespace meshplan::exec::cuda {
namespace {

namespace fe = cudnn_frontend;

// A zigzag block has at most 2 x 2 run pairs, 2 pieces each under a causal mask and 3 under a
// window (attention_pieces.h). Document blocks have a piece (two across a causal diagonal) per
// document they hold on both sides, so a block over more short documents than this goes to the
// own kernels. Not raised for documents: each piece costs a cuDNN launch, its temporaries and a
// glue kernel, and each distinct piece shape a graph build of tens of milliseconds (documents of
// many lengths make many shapes); whether many small pieces still beat the own kernels has not
// been measured on a GPU.
constexpr int32_t kMaxPieces = 16;
// A block whose rows are in no order a few pieces cover is gathered into position order
// (SplitInPositionOrder): each run is a copy of Q, K, V and the accumulators in and out. A whole
// zigzag sequence of N ranks is 2N - 1 runs a side (N = 32 within 64); a striped one is a run per
// row, not gathered (the own kernels take it, as before).
constexpr int32_t kMaxGatherRuns = 64;
constexpr int64_t kAlign = 256;  // bytes; cuDNN wants 16-byte aligned operands

enum Uid : int64_t { kQ = 1, kK, kV, kO, kStats, kDo, kDq, kDk, kDv };

int64_t AlignUp(int64_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

// Dims and strides of a [batch][rows][heads][dim] buffer as cuDNN's [B, H, S, D].
struct Layout {
  std::vector<int64_t> dim, stride;
};
Layout ViewLayout(int64_t batch, int64_t heads, int64_t n, int64_t d, int64_t rows_total,
                  int64_t heads_total) {
  return {{batch, heads, n, d}, {rows_total * heads_total * d, d, heads_total * d, 1}};
}
Layout StatsLayout(int64_t batch, int64_t heads, int64_t n) {
  return {{batch, heads, n, 1}, {heads * n, n, 1, 1}};
}

// Everything a cuDNN graph depends on; data pointers are bound at execution.
struct GraphKey {
  bool backward = false;
  InputType type = InputType::kBf16;
  int64_t batch = 0, hq = 0, hkv = 0, n = 0, m = 0, d = 0;
  PieceMask mask = PieceMask::kFull;
  int64_t band_offset = 0, band_width = 0;  // kBand only (AttentionPiece)
  float scale = 0;
  int64_t q_rows = 0, q_heads = 0, k_rows = 0, k_heads = 0, v_rows = 0, v_heads = 0, do_rows = 0,
          do_heads = 0;
  auto Tie() const {
    return std::tie(backward, type, batch, hq, hkv, n, m, d, mask, band_offset, band_width, scale,
                    q_rows, q_heads, k_rows, k_heads, v_rows, v_heads, do_rows, do_heads);
  }
  bool operator<(const GraphKey& o) const { return Tie() < o.Tie(); }
};

struct BuiltGraph {
  std::shared_ptr<fe::graph::Graph> graph;  // null when cuDNN refused the shape
  int64_t workspace_bytes = 0;
  std::string why_not;
};

// The heads a problem computes, as cuDNN sees them: hq query heads over hkv KV heads, query head
// i reading KV head i / (hq / hkv), which must equal the engine's h / group_size.
struct HeadMap {
  int32_t kv_first = 0, hkv = 0;
};
std::optional<HeadMap> MapHeads(const BlockProblem& p) {
  const int32_t g = p.group_size;
  const int32_t kv_first = p.head_begin / g;
  const int32_t kv_last = (p.head_begin + p.head_count - 1) / g;
  if (kv_first == kv_last) return HeadMap{kv_first, 1};  // every computed head reads one KV head
  if (p.head_begin % g == 0 && p.head_count % g == 0) return HeadMap{kv_first, p.head_count / g};
  return std::nullopt;
}

std::vector<int64_t> HostPositions(const TensorView& t) {
  std::vector<int64_t> pos(static_cast<size_t>(t.rows));
  for (int64_t i = 0; i < t.rows; ++i)
    pos[static_cast<size_t>(i)] = t.host_positions ? t.host_positions[i] : i;
  return pos;
}

// The document starts a host split reads: the host copy for the document kinds (empty for the
// others), or nullopt when a document mask has none (DeviceMask::host_doc_starts null: only the
// device holds them).
std::optional<std::span<const int64_t>> HostDocStarts(const DeviceMask& m) {
  if (!HasDocuments(m.params.kind)) return std::span<const int64_t>{};
  if (m.host_doc_starts == nullptr || m.num_docs < 1) return std::nullopt;
  return std::span<const int64_t>(m.host_doc_starts, static_cast<size_t>(m.num_docs));
}

// Element offset of (row0, global head h0) in a view.
int64_t Offset(const TensorView& t, int64_t row0, int32_t h0, int32_t d) {
  return (row0 * t.heads + (h0 - t.head_begin)) * int64_t{d};
}
const void* At(const TensorView& t, int64_t row0, int32_t h0, int32_t d) {
  return static_cast<const char*>(t.data) + Offset(t, row0, h0, d) * 2;
}

// cuDNN's diagonal band for a kBand piece. What the cuDNN frontend 1.32.0 does with the band
// attributes (.deps/cudnn-frontend/include/cudnn_frontend/...), for query row i and key column j
// of an s_q x s_kv piece:
// - graph_properties.h, SDPA_attributes and SDPA_backward_attributes (the same setters on both):
//   set_diagonal_alignment(TOP_LEFT | BOTTOM_RIGHT), set_diagonal_band_left_bound(int L) (also
//   called set_sliding_window_length), set_diagonal_band_right_bound(int R); set_causal_mask is
//   TOP_LEFT with R = 0, set_causal_mask_bottom_right BOTTOM_RIGHT with R = 0.
// - utils/attn_score_modifiers.h, sliding_window_mask, and node/diagonal_band_mask.h,
//   expand_node (the composite lowering that cuDNN < 9.21 gets): with a = 0 for TOP_LEFT and
//   a = s_kv - s_q for BOTTOM_RIGHT, the right bound keeps (j, i) iff i + a + R >= j (CMP_GE),
//   the left bound keeps it iff j + L - a > i (CMP_GT; "column + window_size - (s_kv - s_q) >
//   row"), everything else becomes -inf. Together: visible iff i + a - L < j <= i + a + R, a band
//   of L + R keys per row, clipped by the piece's edges: R = 0 keeps the diagonal j = i + a
//   itself and nothing right of it, L = 1 nothing left of it (L = 1, R = 0: the diagonal alone).
// - Limits (node/sdpa_support_surface.h, forward; node/scaled_dot_product_flash_attention.h,
//   CompositeSDPABackwardNode::pre_validate_node, backward): a left bound needs s_q <= s_kv
//   ("Sliding window attention is only supported with max_s_q <= max_s_kv"); L <= 0 is refused
//   (backward always, forward below cuDNN 9.10); R < 0 is refused; a left bound needs a right
//   bound (the alignment) below cuDNN 9.10.2; BOTTOM_RIGHT with a left bound needs s_q == s_kv
//   below cuDNN 9.6 (forward), and is refused on Hopper for s_q == s_kv up to cuDNN 9.9; the
//   unified node takes bounds only from cuDNN 9.21 (the frontend then picks the composite one);
//   ragged (packed) sequences take bounds only with a padding mask. Backward: s_q = s_kv = 1 is
//   refused whatever the mask.
// A band piece (attention_pieces.h) has i + offset - width < j <= i + offset with n <= m,
// width >= 1 and 0 <= offset <= width - 1: TOP_LEFT with R = offset and L = width - offset >= 1
// always fits. When offset = m - n > 0 (the band ends at the piece's bottom-right corner: the
// last query sees the last key, as when fewer queries end where their keys end), BOTTOM_RIGHT
// with R = 0 and L = width says the same with no right shift: the causal-plus-window form that
// sliding-window models run, preferred here. These semantics are the frontend's graph; whether
// cuDNN's fused kernels compute them exactly, and how fast, has not run on a GPU yet.
struct CudnnBand {
  bool bottom_right = false;
  int64_t left = 0, right = 0;
};
CudnnBand BandOf(int64_t n, int64_t m, int64_t offset, int64_t width) {
  if (offset > 0 && offset == m - n) return {true, width, 0};
  return {false, width - offset, offset};
}

// The frontend graph of one piece (not yet built for a device). sm_version > 0 names the target
// architecture (e.g. 90) instead of asking the current device. Throws what the frontend throws.
std::shared_ptr<fe::graph::Graph> DescribeGraph(const GraphKey& key, int32_t sm_version = 0) {
  auto graph = std::make_shared<fe::graph::Graph>();
  if (sm_version > 0) graph->set_sm_version(sm_version);
  const auto io = key.type == InputType::kBf16 ? fe::DataType_t::BFLOAT16 : fe::DataType_t::HALF;
  graph->set_io_data_type(io)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  auto tensor = [&](const char* name, int64_t uid, const Layout& l) {
    return graph->tensor(
        fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim(l.dim).set_stride(
            l.stride));
  };
  auto q = tensor("Q", kQ, ViewLayout(key.batch, key.hq, key.n, key.d, key.q_rows, key.q_heads));
  auto k = tensor("K", kK, ViewLayout(key.batch, key.hkv, key.m, key.d, key.k_rows, key.k_heads));
  auto v = tensor("V", kV, ViewLayout(key.batch, key.hkv, key.m, key.d, key.v_rows, key.v_heads));
  auto set_mask = [&](auto& attrs) {
    if (key.mask == PieceMask::kCausalTopLeft) attrs.set_causal_mask(true);
    if (key.mask == PieceMask::kCausalBottomRight) attrs.set_causal_mask_bottom_right(true);
    if (key.mask == PieceMask::kBand) {
      const CudnnBand band = BandOf(key.n, key.m, key.band_offset, key.band_width);
      attrs
          .set_diagonal_alignment(band.bottom_right ? fe::DiagonalAlignment_t::BOTTOM_RIGHT
                                                    : fe::DiagonalAlignment_t::TOP_LEFT)
          .set_diagonal_band_left_bound(static_cast<int>(band.left))
          .set_diagonal_band_right_bound(static_cast<int>(band.right));
    }
  };
  // Temporaries are dense [batch][n][heads][dim]: the strides of a view of n rows and its heads.
  const Layout dense_q = ViewLayout(key.batch, key.hq, key.n, key.d, key.n, key.hq);
  const Layout dense_kv = ViewLayout(key.batch, key.hkv, key.m, key.d, key.m, key.hkv);
  const Layout stats_layout = StatsLayout(key.batch, key.hq, key.n);
  if (!key.backward) {
    auto attrs = fe::graph::SDPA_attributes()
                     .set_name("block_forward")
                     .set_generate_stats(true)
                     .set_attn_scale(key.scale);
    set_mask(attrs);
    auto [o, stats] = graph->sdpa(q, k, v, attrs);
    o->set_output(true).set_uid(kO).set_dim(dense_q.dim).set_stride(dense_q.stride);
    stats->set_output(true)
        .set_uid(kStats)
        .set_data_type(fe::DataType_t::FLOAT)
        .set_dim(stats_layout.dim)
        .set_stride(stats_layout.stride);
  } else {
    auto o = tensor("O", kO, dense_q);
    auto d_o =
        tensor("dO", kDo, ViewLayout(key.batch, key.hq, key.n, key.d, key.do_rows, key.do_heads));
    auto stats = graph->tensor(fe::graph::Tensor_attributes()
                                   .set_name("Stats")
                                   .set_uid(kStats)
                                   .set_dim(stats_layout.dim)
                                   .set_stride(stats_layout.stride)
                                   .set_data_type(fe::DataType_t::FLOAT));
    auto attrs =
        fe::graph::SDPA_backward_attributes().set_name("block_backward").set_attn_scale(key.scale);
    set_mask(attrs);
    auto [dq, dk, dv] = graph->sdpa_backward(q, k, v, o, d_o, stats, attrs);
    dq->set_output(true).set_uid(kDq).set_dim(dense_q.dim).set_stride(dense_q.stride);
    dk->set_output(true).set_uid(kDk).set_dim(dense_kv.dim).set_stride(dense_kv.stride);
    dv->set_output(true).set_uid(kDv).set_dim(dense_kv.dim).set_stride(dense_kv.stride);
  }
  return graph;
}

// The pieces of a block and their graph keys, or nullopt when cuDNN cannot express the block.
struct PieceKeys {
  std::vector<AttentionPiece> pieces;
  std::vector<GraphKey> keys;
  // Gathered into position order first (empty: the pieces index the views as they lie).
  std::vector<RowRun> q_runs, k_runs;
  bool gathered() const { return !q_runs.empty(); }
};
std::optional<PieceKeys> KeysOf(const BlockProblem& p, const TensorView& q, const TensorView& k,
                                bool backward, const TensorView* d_o) {
  if (p.type != InputType::kBf16 && p.type != InputType::kFp16) return std::nullopt;
  if (p.dim % 8 != 0 || p.dim > 256 || p.batch < 1 || p.head_count < 1) return std::nullopt;
  if ((q.positions != nullptr && q.host_positions == nullptr) ||
      (k.positions != nullptr && k.host_positions == nullptr)) {
    return std::nullopt;  // device positions the host cannot see
  }
  const auto heads = MapHeads(p);
  if (!heads) return std::nullopt;
  const MaskParams mask = p.mask.params;
  const auto doc_starts = HostDocStarts(p.mask);
  if (!doc_starts) return std::nullopt;  // document starts the host cannot see
  const auto q_positions = HostPositions(q), k_positions = HostPositions(k);
  PieceKeys out;
  // The gathered buffers hold every row of the block and only the heads it computes.
  int64_t q_heads = q.heads, k_heads = k.heads;
  int64_t do_rows = d_o ? d_o->rows : 0, do_heads = d_o ? d_o->heads : 0;
  if (auto pieces = SplitIntoPieces(q_positions, k_positions, mask, *doc_starts, kMaxPieces)) {
    out.pieces = std::move(*pieces);
  } else {
    auto ordered = SplitInPositionOrder(q_positions, k_positions, mask, *doc_starts, kMaxPieces,
                                        kMaxGatherRuns);
    if (!ordered) return std::nullopt;
    out.pieces = std::move(ordered->pieces);
    out.q_runs = std::move(ordered->q_runs);
    out.k_runs = std::move(ordered->k_runs);
    q_heads = p.head_count;
    k_heads = heads->hkv;
    do_rows = q.rows;  // dO is indexed by the Q rows
    do_heads = p.head_count;
  }
  for (const AttentionPiece& piece : out.pieces) {
    // The band's bounds travel as int (graph_properties.h); a band piece's width is below its
    // rows plus keys, so this refuses only blocks of billions of rows.
    if (piece.band_width > std::numeric_limits<int>::max()) return std::nullopt;
  }
  for (const AttentionPiece& piece : out.pieces) {
    GraphKey key;
    key.backward = backward;
    key.type = p.type;
    key.batch = p.batch;
    key.hq = p.head_count;
    key.hkv = heads->hkv;
    key.n = piece.q_rows;
    key.m = piece.k_rows;
    key.d = p.dim;
    key.mask = piece.mask;
    key.band_offset = piece.band_offset;
    key.band_width = piece.band_width;
    key.scale = p.scale;
    key.q_rows = q.rows;
    key.q_heads = q_heads;
    key.k_rows = k.rows;
    key.k_heads = k_heads;
    key.v_rows = k.rows;  // V is laid out as K (CheckProblem: same rows; the engine: same heads)
    key.v_heads = k_heads;
    if (d_o != nullptr) {
      key.do_rows = do_rows;
      key.do_heads = do_heads;
    }
    out.keys.push_back(key);
  }
  return out;
}

// Opens libcudnn.so.9 for the frontend, once per process (kept open: graphs hold its functions).
Status OpenCudnn() {
  if (fe::cudnn_dlhandle != nullptr) return Status::Ok();
  void* lib = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    return Status::NotFound(std::string("cuDNN: cannot open libcudnn.so.9 (") +
                            (why ? why : "unknown reason") +
                            "); add its directory to LD_LIBRARY_PATH, or use --kernels tensor");
  }
  fe::cudnn_dlhandle = lib;
  return Status::Ok();
}

class CudnnAttentionImpl final : public CudnnAttention {
 public:
  CudnnAttentionImpl(cudnnHandle_t handle, std::string version)
      : handle_(handle), version_(std::move(version)) {}
  ~CudnnAttentionImpl() override {
    graphs_.clear();
    fe::detail::destroy_handle(handle_);
  }

  std::string Describe() const override { return version_; }
  int64_t pieces_run() const override { return pieces_run_; }
  int64_t blocks_gathered() const override { return blocks_gathered_; }
  int64_t graphs_built() const override { return static_cast<int64_t>(graphs_.size()); }

  bool Supports(const BlockProblem& p, const TensorView& q, const TensorView& k,
                bool backward) override {
    return Split(p, q, k, backward).has_value();
  }

  Status Forward(const BlockProblem& p, const TensorView& q, const TensorView& k,
                 const TensorView& v, const TensorView& o, const TensorView& lse,
                 cudaStream_t stream) override {
    auto split = Split(p, q, k, false);
    if (!split)
      return Status::Invalid("cuDNN cannot compute this block (see CudnnAttention::Supports)");
    if (!split->gathered()) return RunForward(p, *split, q, k, v, o, lse, stream);
    // Gathered into position order: Q, K, V and the accumulators O and LSE copied by their runs
    // into dense buffers of the computed heads, the pieces run there, O and LSE copied back.
    const HeadMap heads = *MapHeads(p);
    const Gathered g(p, heads, q.rows, k.rows);
    const int64_t q16 = AlignUp(g.Elements(g.q, p.dim) * 2),
                  kv16 = AlignUp(g.Elements(g.k, p.dim) * 2);
    const int64_t o32 = AlignUp(g.Elements(g.q, p.dim) * 4),
                  lse32 = AlignUp(g.Elements(g.q, 1) * 4);
    char* temp = nullptr;
    MESHPLAN_RETURN_IF_ERROR(Allocate(&temp, q16 + 2 * kv16 + o32 + lse32, stream));
    const TensorView gq = g.View(g.q, temp), gk = g.View(g.k, temp + q16),
                     gv = g.View(g.k, temp + q16 + kv16), go = g.View(g.q, temp + q16 + 2 * kv16),
                     glse = g.View(g.q, temp + q16 + 2 * kv16 + o32);
    Status run = Status::Ok();
    for (const Copy& c :
         {Copy{q, gq, 2, p.dim, &split->q_runs}, Copy{o, go, 4, p.dim, &split->q_runs},
          Copy{lse, glse, 4, 1, &split->q_runs}, Copy{k, gk, 2, p.dim, &split->k_runs},
          Copy{v, gv, 2, p.dim, &split->k_runs}}) {
      if (run.ok()) run = CopyRuns(p.batch, c, false, stream);
    }
    if (run.ok()) run = RunForward(p, *split, gq, gk, gv, go, glse, stream);
    if (run.ok()) ++blocks_gathered_;
    for (const Copy& c :
         {Copy{o, go, 4, p.dim, &split->q_runs}, Copy{lse, glse, 4, 1, &split->q_runs}}) {
      if (run.ok()) run = CopyRuns(p.batch, c, true, stream);
    }
    MESHPLAN_RETURN_IF_ERROR(Release(temp, stream));
    return run;
  }

  Status Backward(const BlockProblem& p, const TensorView& q, const TensorView& k,
                  const TensorView& v, const TensorView& d_o, const TensorView& lse,
                  const TensorView& delta, const TensorView& dq, const TensorView& dk,
                  const TensorView& dv, cudaStream_t stream) override {
    auto split = Split(p, q, k, true, &d_o);
    if (!split)
      return Status::Invalid("cuDNN cannot compute this block (see CudnnAttention::Supports)");
    if (!split->gathered())
      return RunBackward(p, *split, q, k, v, d_o, lse, delta, dq, dk, dv, stream);
    // Gathered as the forward: Q, dO, LSE, delta and the dQ accumulator by the Q runs, K, V and
    // the dK, dV accumulators by the K runs; dQ, dK and dV copied back.
    const HeadMap heads = *MapHeads(p);
    const Gathered g(p, heads, q.rows, k.rows);
    const int64_t q16 = AlignUp(g.Elements(g.q, p.dim) * 2),
                  kv16 = AlignUp(g.Elements(g.k, p.dim) * 2);
    const int64_t q32 = AlignUp(g.Elements(g.q, p.dim) * 4),
                  kv32 = AlignUp(g.Elements(g.k, p.dim) * 4);
    const int64_t row32 = AlignUp(g.Elements(g.q, 1) * 4);
    char* temp = nullptr;
    MESHPLAN_RETURN_IF_ERROR(
        Allocate(&temp, 2 * q16 + 2 * kv16 + q32 + 2 * kv32 + 2 * row32, stream));
    char* at = temp;
    auto next = [&at](int64_t bytes) {
      char* here = at;
      at += bytes;
      return here;
    };
    const TensorView gq = g.View(g.q, next(q16)), gdo = g.View(g.q, next(q16)),
                     gk = g.View(g.k, next(kv16)), gv = g.View(g.k, next(kv16)),
                     gdq = g.View(g.q, next(q32)), gdk = g.View(g.k, next(kv32)),
                     gdv = g.View(g.k, next(kv32)), glse = g.View(g.q, next(row32)),
                     gdelta = g.View(g.q, next(row32));
    Status run = Status::Ok();
    for (const Copy& c :
         {Copy{q, gq, 2, p.dim, &split->q_runs}, Copy{d_o, gdo, 2, p.dim, &split->q_runs},
          Copy{dq, gdq, 4, p.dim, &split->q_runs}, Copy{lse, glse, 4, 1, &split->q_runs},
          Copy{delta, gdelta, 4, 1, &split->q_runs}, Copy{k, gk, 2, p.dim, &split->k_runs},
          Copy{v, gv, 2, p.dim, &split->k_runs}, Copy{dk, gdk, 4, p.dim, &split->k_runs},
          Copy{dv, gdv, 4, p.dim, &split->k_runs}}) {
      if (run.ok()) run = CopyRuns(p.batch, c, false, stream);
    }
    if (run.ok())
      run = RunBackward(p, *split, gq, gk, gv, gdo, glse, gdelta, gdq, gdk, gdv, stream);
    if (run.ok()) ++blocks_gathered_;
    for (const Copy& c :
         {Copy{dq, gdq, 4, p.dim, &split->q_runs}, Copy{dk, gdk, 4, p.dim, &split->k_runs},
          Copy{dv, gdv, 4, p.dim, &split->k_runs}}) {
      if (run.ok()) run = CopyRuns(p.batch, c, true, stream);
    }
    MESHPLAN_RETURN_IF_ERROR(Release(temp, stream));
    return run;
  }

 private:
  struct Split_ {
    std::vector<AttentionPiece> pieces;
    std::vector<const BuiltGraph*> graphs;
    std::vector<RowRun> q_runs, k_runs;  // PieceKeys::q_runs, k_runs
    bool gathered() const { return !q_runs.empty(); }
  };

  // The dense buffers a gathered block runs on: [batch][rows][heads][dim] of every row of the
  // block and the heads it computes (query heads from p.head_begin, KV heads from kv_first).
  struct Side {
    int64_t rows = 0;
    int32_t head_begin = 0, heads = 0;
  };
  struct Gathered {
    Side q, k;
    int64_t batch = 1;
    Gathered(const BlockProblem& p, const HeadMap& h, int64_t q_rows, int64_t k_rows)
        : q{q_rows, p.head_begin, p.head_count}, k{k_rows, h.kv_first, h.hkv}, batch(p.batch) {}
    int64_t Elements(const Side& s, int32_t dim) const {
      return batch * s.rows * s.heads * int64_t{dim};
    }
    static TensorView View(const Side& s, char* data) {
      TensorView v;
      v.data = data;
      v.rows = s.rows;
      v.head_begin = s.head_begin;
      v.heads = s.heads;
      return v;
    }
  };

  // One tensor's copy between its view and its gathered buffer (which holds heads
  // [gathered.head_begin, + gathered.heads) of the view), by runs.
  struct Copy {
    TensorView view, gathered;
    int32_t elem_bytes = 2, dim = 0;
    const std::vector<RowRun>* runs = nullptr;
  };
  // Gathers (scatter false: view rows -> gathered rows) or scatters back (true).
  static Status CopyRuns(int64_t batch, const Copy& c, bool scatter, cudaStream_t stream) {
    for (const RowRun& r : *c.runs) {
      RowCopy rc;
      rc.elem_bytes = c.elem_bytes;
      rc.batch = batch;
      rc.dim = c.dim;
      rc.count = r.rows;
      rc.copy_heads = c.gathered.heads;
      const TensorView& src = scatter ? c.gathered : c.view;
      const TensorView& dst = scatter ? c.view : c.gathered;
      rc.src = src.data;
      rc.dst = dst.data;
      rc.src_row0 = scatter ? r.dst_row0 : r.src_row0;
      rc.dst_row0 = scatter ? r.src_row0 : r.dst_row0;
      rc.src_rows_total = src.rows;
      rc.dst_rows_total = dst.rows;
      rc.src_heads = src.heads;
      rc.dst_heads = dst.heads;
      rc.src_head0 = c.gathered.head_begin - src.head_begin;
      rc.dst_head0 = c.gathered.head_begin - dst.head_begin;
      MESHPLAN_RETURN_IF_ERROR(Check(LaunchRowCopy(rc, stream),
                                     scatter ? "scatter of a gathered cuDNN block"
                                             : "gather of a cuDNN block into position order"));
    }
    return Status::Ok();
  }

  // The pieces of a split on views where they index the rows (the block's own, or gathered).
  Status RunForward(const BlockProblem& p, const Split_& split, const TensorView& q,
                    const TensorView& k, const TensorView& v, const TensorView& o,
                    const TensorView& lse, cudaStream_t stream) {
    const HeadMap heads = *MapHeads(p);
    for (size_t i = 0; i < split.pieces.size(); ++i) {
      const AttentionPiece& piece = split.pieces[i];
      const BuiltGraph& g = *split.graphs[i];
      const int64_t o_bytes = AlignUp(p.batch * piece.q_rows * p.head_count * p.dim * 2);
      const int64_t stats_bytes = AlignUp(p.batch * p.head_count * piece.q_rows * 4);
      char* temp = nullptr;
      MESHPLAN_RETURN_IF_ERROR(Allocate(&temp, o_bytes + stats_bytes + g.workspace_bytes, stream));
      void* piece_o = temp;
      float* piece_lse = reinterpret_cast<float*>(temp + o_bytes);
      std::unordered_map<int64_t, void*> pack = {
          {kQ, const_cast<void*>(At(q, piece.q_row0, p.head_begin, p.dim))},
          {kK, const_cast<void*>(At(k, piece.k_row0, heads.kv_first, p.dim))},
          {kV, const_cast<void*>(At(v, piece.k_row0, heads.kv_first, p.dim))},
          {kO, piece_o},
          {kStats, piece_lse}};
      Status run = Execute(g, pack, temp + o_bytes + stats_bytes, stream);
      if (run.ok()) {
        const RowSlice s{p.batch, piece.q_row0, piece.q_rows, p.head_begin, p.head_count, p.dim};
        run = Check(LaunchFoldPiece(p.type, s, o, lse, piece_o, piece_lse, stream),
                    "fold of a cuDNN piece");
      }
      MESHPLAN_RETURN_IF_ERROR(Release(temp, stream));
      MESHPLAN_RETURN_IF_ERROR(run);
      ++pieces_run_;
    }
    return Status::Ok();
  }

  Status RunBackward(const BlockProblem& p, const Split_& split, const TensorView& q,
                     const TensorView& k, const TensorView& v, const TensorView& d_o,
                     const TensorView& lse, const TensorView& delta, const TensorView& dq,
                     const TensorView& dk, const TensorView& dv, cudaStream_t stream) {
    const HeadMap heads = *MapHeads(p);
    for (size_t i = 0; i < split.pieces.size(); ++i) {
      const AttentionPiece& piece = split.pieces[i];
      const BuiltGraph& g = *split.graphs[i];
      const int64_t q_bytes = AlignUp(p.batch * piece.q_rows * p.head_count * p.dim * 2);
      const int64_t kv_bytes = AlignUp(p.batch * piece.k_rows * heads.hkv * p.dim * 2);
      const int64_t stats_bytes = AlignUp(p.batch * p.head_count * piece.q_rows * 4);
      char* temp = nullptr;
      MESHPLAN_RETURN_IF_ERROR(
          Allocate(&temp, 2 * q_bytes + 2 * kv_bytes + stats_bytes + g.workspace_bytes, stream));
      char* pseudo_o = temp;
      char* piece_dq = pseudo_o + q_bytes;
      char* piece_dk = piece_dq + q_bytes;
      char* piece_dv = piece_dk + kv_bytes;
      float* stats = reinterpret_cast<float*>(piece_dv + kv_bytes);
      char* workspace = piece_dv + kv_bytes + stats_bytes;
      const RowSlice qs{p.batch, piece.q_row0, piece.q_rows, p.head_begin, p.head_count, p.dim};
      const RowSlice ks{p.batch, piece.k_row0, piece.k_rows, heads.kv_first, heads.hkv, p.dim};
      Status run =
          Check(LaunchPrepareBackwardPiece(p.type, qs, d_o, delta, lse, pseudo_o, stats, stream),
                "preparation of a cuDNN backward piece");
      if (run.ok()) {
        std::unordered_map<int64_t, void*> pack = {
            {kQ, const_cast<void*>(At(q, piece.q_row0, p.head_begin, p.dim))},
            {kK, const_cast<void*>(At(k, piece.k_row0, heads.kv_first, p.dim))},
            {kV, const_cast<void*>(At(v, piece.k_row0, heads.kv_first, p.dim))},
            {kO, pseudo_o},
            {kDo, const_cast<void*>(At(d_o, piece.q_row0, p.head_begin, p.dim))},
            {kStats, stats},
            {kDq, piece_dq},
            {kDk, piece_dk},
            {kDv, piece_dv}};
        run = Execute(g, pack, workspace, stream);
      }
      if (run.ok())
        run = Check(LaunchAddPiece(p.type, qs, dq, piece_dq, stream), "dQ of a cuDNN piece");
      if (run.ok())
        run = Check(LaunchAddPiece(p.type, ks, dk, piece_dk, stream), "dK of a cuDNN piece");
      if (run.ok())
        run = Check(LaunchAddPiece(p.type, ks, dv, piece_dv, stream), "dV of a cuDNN piece");
      MESHPLAN_RETURN_IF_ERROR(Release(temp, stream));
      MESHPLAN_RETURN_IF_ERROR(run);
      ++pieces_run_;
    }
    return Status::Ok();
  }

  // The pieces of the block and their built graphs, or nullopt when cuDNN cannot compute it.
  std::optional<Split_> Split(const BlockProblem& p, const TensorView& q, const TensorView& k,
                              bool backward, const TensorView* d_o = nullptr) {
    auto keys = KeysOf(p, q, k, backward, d_o);
    if (!keys) return std::nullopt;
    Split_ split;
    split.pieces = std::move(keys->pieces);
    split.q_runs = std::move(keys->q_runs);
    split.k_runs = std::move(keys->k_runs);
    for (const GraphKey& key : keys->keys) {
      const BuiltGraph& g = Graph(key);
      if (!g.graph) return std::nullopt;
      split.graphs.push_back(&g);
    }
    return split;
  }

  const BuiltGraph& Graph(const GraphKey& key) {
    auto it = graphs_.find(key);
    if (it == graphs_.end()) it = graphs_.emplace(key, Build(key)).first;
    return it->second;
  }

  BuiltGraph Build(const GraphKey& key) {
    BuiltGraph built;
    try {
      auto graph = DescribeGraph(key);
      auto status = graph->build(handle_, {fe::HeurMode_t::A});
      if (status.is_bad()) {
        built.why_not = status.get_message();
        return built;
      }
      int64_t workspace = 0;
      status = graph->get_workspace_size(workspace);
      if (status.is_bad()) {
        built.why_not = status.get_message();
        return built;
      }
      built.graph = std::move(graph);
      built.workspace_bytes = AlignUp(std::max<int64_t>(workspace, 0));
    } catch (const std::exception& e) {
      built.why_not = e.what();
    }
    return built;
  }

  Status Execute(const BuiltGraph& g, std::unordered_map<int64_t, void*>& pack, void* workspace,
                 cudaStream_t stream) {
    try {
      const cudnnStatus_t set = fe::detail::set_stream(handle_, stream);
      if (set != CUDNN_STATUS_SUCCESS)
        return Status::Internal("cudnnSetStream failed: " + std::to_string(set));
      auto status = g.graph->execute(handle_, pack, workspace);
      if (status.is_bad())
        return Status::Internal("cuDNN attention failed: " + status.get_message());
    } catch (const std::exception& e) {
      return Status::Internal(std::string("cuDNN attention failed: ") + e.what());
    }
    return Status::Ok();
  }

  static Status Check(cudaError_t err, const char* what) {
    if (err == cudaSuccess) return Status::Ok();
    return Status::Internal(std::string(what) + ": " + cudaGetErrorString(err));
  }
  static Status Allocate(char** ptr, int64_t bytes, cudaStream_t stream) {
    void* p = nullptr;
    const cudaError_t err =
        cudaMallocAsync(&p, static_cast<size_t>(std::max<int64_t>(bytes, kAlign)), stream);
    if (err != cudaSuccess) {
      return Status::Internal("cuDNN temporaries of " + std::to_string(bytes) +
                              " bytes: " + cudaGetErrorString(err));
    }
    *ptr = static_cast<char*>(p);
    return Status::Ok();
  }
  static Status Release(char* ptr, cudaStream_t stream) {
    return Check(cudaFreeAsync(ptr, stream), "free of cuDNN temporaries");
  }

  cudnnHandle_t handle_;
  std::string version_;
  std::map<GraphKey, BuiltGraph> graphs_;
  int64_t pieces_run_ = 0;
  int64_t blocks_gathered_ = 0;
};

}  // namespace

Result<std::unique_ptr<CudnnAttention>> CreateCudnnAttention(int device) {
  MESHPLAN_RETURN_IF_ERROR(OpenCudnn());
  try {
    const size_t version = fe::detail::get_backend_version();
    if (version < 90000) {
      return Status::Invalid("cuDNN " + std::to_string(version) +
                             " is too old: the cuDNN path needs cuDNN 9");
    }
    cudnnHandle_t handle = nullptr;
    const cudnnStatus_t made = fe::detail::create_handle(&handle);
    if (made != CUDNN_STATUS_SUCCESS) {
      return Status::Internal("cuDNN: cudnnCreate on device " + std::to_string(device) +
                              " failed (status " + std::to_string(made) + ")");
    }
    const std::string describe = "cuDNN " + std::to_string(version / 10000) + "." +
                                 std::to_string(version / 100 % 100) + "." +
                                 std::to_string(version % 100) + " (frontend " +
                                 std::to_string(CUDNN_FRONTEND_MAJOR_VERSION) + "." +
                                 std::to_string(CUDNN_FRONTEND_MINOR_VERSION) + "." +
                                 std::to_string(CUDNN_FRONTEND_PATCH_VERSION) + ")";
    return std::unique_ptr<CudnnAttention>(new CudnnAttentionImpl(handle, describe));
  } catch (const std::exception& e) {
    return Status::Internal(std::string("cuDNN: ") + e.what());
  }
}

Result<int32_t> ValidateCudnnBlockOnHost(const BlockProblem& p, const TensorView& q,
                                         const TensorView& k, const TensorView* d_o, bool backward,
                                         int32_t sm_version) {
  MESHPLAN_RETURN_IF_ERROR(OpenCudnn());
  auto keys = KeysOf(p, q, k, backward, d_o);
  if (!keys)
    return Status::Invalid("cuDNN cannot express this block (mask, heads, type or positions)");
  try {
    for (const GraphKey& key : keys->keys) {
      auto status = DescribeGraph(key, sm_version)->validate();
      if (status.is_bad())
        return Status::Invalid("cuDNN graph of a piece: " + status.get_message());
    }
  } catch (const std::exception& e) {
    return Status::Invalid(std::string("cuDNN graph of a piece: ") + e.what());
  }
  return static_cast<int32_t>(keys->pieces.size());
}

}  // namespace meshplan::exec::cuda
