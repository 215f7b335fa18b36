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

ConstView Map(const RowsView& r, int64_t d) { return ConstView(r.data, r.rows, d, Eigen::OuterStride<>(r.stride)); }
View Map(MutableRows r, int64_t d) { return View(r.data, r.rows, d, Eigen::OuterStride<>(r.stride)); }

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// scale * q k^T with masked pairs set to -inf.
RowMajor Scores(const RowsView& q, const RowsView& k, int64_t d, float scale, const MaskRule& mask) {
  RowMajor s = (Map(q, d) * Map(k, d).transpose()) * scale;
  if (!mask.full()) {
    for (int64_t i = 0; i < q.rows; ++i) {
      for (int64_t j = 0; j < k.rows; ++j) {
        if (!mask.Visible(q.positions[i], k.positions[j])) s(i, j) = kNegInf;
      }
    }
  }
  return s;
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
  RowMajor s = Scores(q, k, d, scale, mask);
  for (int64_t i = 0; i < s.rows(); ++i) {
    const float m = s.row(i).maxCoeff();
    if (m == kNegInf) {  // no visible key
      s.row(i).setZero();
      lse[i] = kNegInf;
      continue;
    }
    s.row(i) = (s.row(i).array() - m).exp().matrix();
    const float l = s.row(i).sum();
    lse[i] = m + std::log(l);
    s.row(i) /= l;
  }
  Map(o, d).noalias() = s * Map(v, d);
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
  RowMajor p = Scores(q, k, d, scale, mask);
  for (int64_t i = 0; i < p.rows(); ++i) {
    if (lse[i] == kNegInf) {
      p.row(i).setZero();
    } else {
      p.row(i) = (p.row(i).array() - lse[i]).exp().matrix();  // masked: exp(-inf) = 0
    }
  }
  const ConstView dov = Map(d_o, d);
  Map(dv, d).noalias() += p.transpose() * dov;
  RowMajor ds = dov * Map(v, d).transpose();  // dP
  for (int64_t i = 0; i < ds.rows(); ++i) ds.row(i) = (p.row(i).array() * (ds.row(i).array() - delta[i])).matrix();
  Map(dq, d).noalias() += (ds * Map(k, d)) * scale;
  Map(dk, d).noalias() += (ds.transpose() * Map(q, d)) * scale;
}

}  // namespace meshplan::exec
