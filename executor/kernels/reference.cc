#include "executor/kernels/reference.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/sequence/mask_rule.h"
#include "executor/io/input_source.h"

namespace meshplan::exec {
namespace {

double Dot(const double* a, const double* b, int64_t n) {
  double s = 0.0;
  for (int64_t e = 0; e < n; ++e) s += a[e] * b[e];
  return s;
}

}  // namespace

ReferenceVisibility::ReferenceVisibility(const Mask& mask, int64_t seq_len)
    : params_(mask.Params()) {
  if (mask.IsDocuments()) {
    // doc_of_[t] = index of the document holding token t.
    doc_of_.resize(static_cast<size_t>(seq_len));
    int64_t t = 0;
    for (size_t i = 0; i < mask.document_lengths.size(); ++i) {
      for (int64_t j = 0; j < mask.document_lengths[i] && t < seq_len; ++j, ++t) {
        doc_of_[static_cast<size_t>(t)] = static_cast<int64_t>(i);
      }
    }
  }
}

bool ReferenceVisibility::operator()(int64_t q, int64_t k) const {
  return meshplan::Visible(params_, q, k,
                           [this](int64_t t) { return doc_of_[static_cast<size_t>(t)]; });
}

void ReferenceForward(const Workload& w, AttentionTensors<double>& t) {
  const int64_t B = w.batch, S = w.seq_len, Hq = w.q_heads, d = w.head_dim;
  const int64_t group = w.group_size();
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  const double neg_inf = -std::numeric_limits<double>::infinity();
  const ReferenceVisibility visible(w.mask, S);

  t.o = Tensor<double>(B, S, Hq, d);
  t.lse = Tensor<double>(B, S, Hq, 1);
  std::vector<double> scores(static_cast<size_t>(S));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t kvh = h / group;
      for (int64_t i = 0; i < S; ++i) {
        const double* qi = &t.q.at(b, i, h, 0);
        double max_score = neg_inf;
        for (int64_t j = 0; j < S; ++j) {
          if (!visible(i, j)) continue;
          scores[static_cast<size_t>(j)] = scale * Dot(qi, &t.k.at(b, j, kvh, 0), d);
          max_score = std::max(max_score, scores[static_cast<size_t>(j)]);
        }
        double* oi = &t.o.at(b, i, h, 0);
        if (max_score == neg_inf) {  // no visible key: O stays 0
          t.lse.at(b, i, h, 0) = neg_inf;
          continue;
        }
        double sum = 0.0;
        for (int64_t j = 0; j < S; ++j) {
          if (!visible(i, j)) continue;
          const double p = std::exp(scores[static_cast<size_t>(j)] - max_score);
          sum += p;
          const double* vj = &t.v.at(b, j, kvh, 0);
          for (int64_t e = 0; e < d; ++e) oi[e] += p * vj[e];
        }
        for (int64_t e = 0; e < d; ++e) oi[e] /= sum;
        t.lse.at(b, i, h, 0) = max_score + std::log(sum);
      }
    }
  }
}

void ReferenceBackward(const Workload& w, AttentionTensors<double>& t) {
  const int64_t B = w.batch, S = w.seq_len, Hq = w.q_heads, Hkv = w.kv_heads, d = w.head_dim;
  const int64_t group = w.group_size();
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  const double neg_inf = -std::numeric_limits<double>::infinity();
  const ReferenceVisibility visible(w.mask, S);

  t.dq = Tensor<double>(B, S, Hq, d);
  t.dk = Tensor<double>(B, S, Hkv, d);
  t.dv = Tensor<double>(B, S, Hkv, d);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t kvh = h / group;
      for (int64_t i = 0; i < S; ++i) {
        const double lse = t.lse.at(b, i, h, 0);
        if (lse == neg_inf) continue;  // fully masked row: P = 0, no gradient flows
        const double* qi = &t.q.at(b, i, h, 0);
        const double* doi = &t.d_o.at(b, i, h, 0);
        const double big_d = Dot(doi, &t.o.at(b, i, h, 0), d);  // D_i = rowsum(dO * O)
        double* dqi = &t.dq.at(b, i, h, 0);
        for (int64_t j = 0; j < S; ++j) {
          if (!visible(i, j)) continue;
          const double* kj = &t.k.at(b, j, kvh, 0);
          const double* vj = &t.v.at(b, j, kvh, 0);
          const double p = std::exp(scale * Dot(qi, kj, d) - lse);
          const double dp = Dot(doi, vj, d);
          const double ds = p * (dp - big_d);
          double* dkj = &t.dk.at(b, j, kvh, 0);
          double* dvj = &t.dv.at(b, j, kvh, 0);
          for (int64_t e = 0; e < d; ++e) {
            dvj[e] += p * doi[e];
            dqi[e] += scale * ds * kj[e];
            dkj[e] += scale * ds * qi[e];
          }
        }
      }
    }
  }
}

AttentionTensors<double> RandomInputs(const Workload& w, uint64_t seed) {
  const int64_t B = w.batch, S = w.seq_len, Hq = w.q_heads, Hkv = w.kv_heads, d = w.head_dim;
  AttentionTensors<double> t;
  t.q = Tensor<double>(B, S, Hq, d);
  t.k = Tensor<double>(B, S, Hkv, d);
  t.v = Tensor<double>(B, S, Hkv, d);
  t.d_o = Tensor<double>(B, S, Hq, d);
  t.o = Tensor<double>(B, S, Hq, d);
  t.lse = Tensor<double>(B, S, Hq, 1);
  t.dq = Tensor<double>(B, S, Hq, d);
  t.dk = Tensor<double>(B, S, Hkv, d);
  t.dv = Tensor<double>(B, S, Hkv, d);
  // Counter-based (executor/io/input_source.h), so a rank can generate its own rows alone.
  auto fill = [seed](InputTensor which, Tensor<double>& dst) {
    for (size_t i = 0; i < dst.data.size(); ++i) dst.data[i] = SeededInputValue(seed, which, i);
  };
  fill(InputTensor::kQ, t.q);
  fill(InputTensor::kK, t.k);
  fill(InputTensor::kV, t.v);
  fill(InputTensor::kDO, t.d_o);
  return t;
}

}  // namespace meshplan::exec
