#include "executor/block_kernels.h"

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

ConstView Map(const RowsView& r, int64_t d) { return ConstView(r.data, r.rows, d, Eigen::OuterStride<>(r.stride)); }
View Map(MutableRows r, int64_t d) { return View(r.data, r.rows, d, Eigen::OuterStride<>(r.stride)); }

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Per-thread scratch, reused across calls (each rank runs on its own thread): no allocation or
// fresh page faults per block.
struct Scratch {
  std::vector<float> scores, ds, row, inv_sum;
};
thread_local Scratch scratch;

float* Buffer(std::vector<float>& v, int64_t n) {
  if (v.size() < static_cast<size_t>(n)) v.resize(static_cast<size_t>(n));
  return v.data();
}

// How much of a block the mask leaves visible, decided from the position ranges alone.
enum class Visibility { kNone, kAll, kPartial };

Visibility Classify(const RowsView& q, const RowsView& k, const MaskRule& mask) {
  if (mask.full()) return Visibility::kAll;
  const auto [q_lo, q_hi] = std::minmax_element(q.positions, q.positions + q.rows);
  const auto [k_lo, k_hi] = std::minmax_element(k.positions, k.positions + k.rows);
  // Every non-full mask is causal: a key after every query is never visible.
  if (*k_lo > *q_hi) return Visibility::kNone;
  // Every key at or before every query, and the farthest pair (latest query, earliest key) is
  // visible: then every pair is (window: every distance is at most that pair's; documents:
  // documents are contiguous, so [earliest key, latest query] lies in one document).
  if (*k_hi <= *q_lo && mask.Visible(*q_hi, *k_lo)) return Visibility::kAll;
  return Visibility::kPartial;
}

// s = scale * q k^T (the scale is applied as the GEMM's alpha), masked pairs set to -inf.
void Scores(Dense& s, const RowsView& q, const RowsView& k, int64_t d, float scale, const MaskRule& mask,
            Visibility visibility) {
  s.noalias() = scale * Map(q, d) * Map(k, d).transpose();
  if (visibility != Visibility::kPartial) return;
  for (int64_t i = 0; i < q.rows; ++i) {
    const int64_t qp = q.positions[i];
    float* row = s.data() + i * k.rows;
    for (int64_t j = 0; j < k.rows; ++j) {
      if (!mask.Visible(qp, k.positions[j])) row[j] = kNegInf;
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

}  // namespace

MaskRule::MaskRule(const Mask& mask) : kind_(mask.kind), window_(mask.window) {
  if (mask.kind == MaskKind::kDocuments) {
    int64_t start = 0;
    for (int64_t length : mask.document_lengths) {
      doc_starts_.push_back(start);
      start += length;
    }
  }
}

int64_t MaskRule::DocOf(int64_t token) const {
  return static_cast<int64_t>(std::upper_bound(doc_starts_.begin(), doc_starts_.end(), token) - doc_starts_.begin());
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
  const bool partial = visibility == Visibility::kPartial;
  Dense s(Buffer(scratch.scores, nq * nk), nq, nk);
  Scores(s, q, k, d, scale, mask, visibility);
  float* tmp = Buffer(scratch.row, nk);
  float* inv_sum = Buffer(scratch.inv_sum, nq);
  for (int64_t i = 0; i < nq; ++i) {
    float* row = s.data() + i * nk;
    const float m = s.row(i).maxCoeff();
    if (m == kNegInf) {  // no visible key
      s.row(i).setZero();
      lse[i] = kNegInf;
      inv_sum[i] = 0;
      continue;
    }
    ExpShifted(row, nk, m, partial, tmp);
    const float l = s.row(i).sum();
    lse[i] = m + std::log(l);
    inv_sum[i] = 1.0f / l;
  }
  // Normalise the [nq x d] output instead of the [nq x nk] probabilities.
  out.noalias() = s * Map(v, d);
  for (int64_t i = 0; i < nq; ++i) out.row(i) *= inv_sum[i];
}

void MergePartial(MutableRows o, float* lse, const float* o_in, int64_t o_in_stride, const float* lse_in, int64_t d) {
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
                   const float* lse, const float* delta, int64_t d, float scale, const MaskRule& mask,
                   MutableRows dq, MutableRows dk, MutableRows dv) {
  const int64_t nq = q.rows, nk = k.rows;
  const Visibility visibility = nq == 0 || nk == 0 ? Visibility::kNone : Classify(q, k, mask);
  if (visibility == Visibility::kNone) return;  // P = 0: nothing to add
  const bool partial = visibility == Visibility::kPartial;
  Dense p(Buffer(scratch.scores, nq * nk), nq, nk);
  Scores(p, q, k, d, scale, mask, visibility);
  float* tmp = Buffer(scratch.row, nk);
  for (int64_t i = 0; i < nq; ++i) {
    if (lse[i] == kNegInf) {
      p.row(i).setZero();
    } else {
      ExpShifted(p.data() + i * nk, nk, lse[i], partial, tmp);  // masked: exactly 0
    }
  }
  const ConstView dov = Map(d_o, d);
  Map(dv, d).noalias() += p.transpose() * dov;
  Dense ds(Buffer(scratch.ds, nq * nk), nq, nk);
  ds.noalias() = dov * Map(v, d).transpose();  // dP
  for (int64_t i = 0; i < nq; ++i) ds.row(i) = (p.row(i).array() * (ds.row(i).array() - delta[i])).matrix();
  // The scale is applied as the GEMMs' alpha.
  Map(dq, d).noalias() += scale * ds * Map(k, d);
  Map(dk, d).noalias() += scale * ds.transpose() * Map(q, d);
}

}  // namespace meshplan::exec
