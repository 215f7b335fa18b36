#include "executor/device/host_kernels.h"

#include <cstring>
#include <vector>

#include "executor/device/half_float.h"

namespace meshplan::exec {
namespace {

// Rows of one (batch, head) of an input view as fp32 rows: fp32 inputs are read in place (row
// stride heads * dim); 16-bit inputs are decoded into `scratch` (row stride dim).
RowsView InputRows(InputType type, const TensorView& t, int64_t b, int32_t head, int32_t dim,
                   std::vector<float>* scratch) {
  const int64_t offset = ((b * t.rows) * t.heads + (head - t.head_begin)) * dim;
  if (type == InputType::kFp32) {
    return {static_cast<const float*>(t.data) + offset, t.rows, static_cast<int64_t>(t.heads) * dim,
            t.positions};
  }
  scratch->resize(static_cast<size_t>(t.rows * dim));
  for (int64_t r = 0; r < t.rows; ++r) {
    const int64_t row = offset + r * t.heads * dim;
    for (int32_t e = 0; e < dim; ++e)
      (*scratch)[static_cast<size_t>(r * dim + e)] = InputAt(type, t.data, row + e);
  }
  return {scratch->data(), t.rows, dim, t.positions};
}

// Pointer to (b, row 0, head) of an fp32 view and its row stride.
float* At(const TensorView& t, int64_t b, int32_t head, int32_t dim) {
  return static_cast<float*>(t.data) + (b * t.rows * t.heads + (head - t.head_begin)) * dim;
}

}  // namespace

void HostBlockForward(const BlockProblem& p, const MaskRule& mask, const TensorView& q,
                      const TensorView& k, const TensorView& v, const TensorView& o,
                      const TensorView& lse) {
  const int64_t n = q.rows, d = p.dim;
  std::vector<float> part(static_cast<size_t>(n * d)), part_lse(static_cast<size_t>(n)),
      acc_lse(part_lse.size());
  std::vector<float> qs, ks, vs;
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int32_t h = p.head_begin; h < p.head_begin + p.head_count; ++h) {
      const int32_t kh = h / p.group_size;
      const RowsView qr = InputRows(p.type, q, b, h, p.dim, &qs);
      const RowsView kr = InputRows(p.type, k, b, kh, p.dim, &ks);
      const RowsView vr = InputRows(p.type, v, b, kh, p.dim, &vs);
      BlockForward(qr, kr, vr, d, p.scale, mask, {part.data(), n, d}, part_lse.data());
      float* lse_rows = At(lse, b, h, 1);
      for (int64_t r = 0; r < n; ++r) acc_lse[r] = lse_rows[r * lse.heads];
      MergePartial({At(o, b, h, p.dim), n, o.heads * d}, acc_lse.data(), part.data(), d,
                   part_lse.data(), d);
      for (int64_t r = 0; r < n; ++r) lse_rows[r * lse.heads] = acc_lse[r];
    }
  }
}

void HostBlockBackward(const BlockProblem& p, const MaskRule& mask, const TensorView& q,
                       const TensorView& k, const TensorView& v, const TensorView& d_o,
                       const TensorView& lse, const TensorView& delta, const TensorView& dq,
                       const TensorView& dk, const TensorView& dv) {
  const int64_t n = q.rows, d = p.dim;
  std::vector<float> lse_rows(static_cast<size_t>(n)), delta_rows(lse_rows.size());
  std::vector<float> qs, ks, vs, dos;
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int32_t h = p.head_begin; h < p.head_begin + p.head_count; ++h) {
      const int32_t kh = h / p.group_size;
      const RowsView qr = InputRows(p.type, q, b, h, p.dim, &qs);
      const RowsView kr = InputRows(p.type, k, b, kh, p.dim, &ks);
      const RowsView vr = InputRows(p.type, v, b, kh, p.dim, &vs);
      const RowsView dor = InputRows(p.type, d_o, b, h, p.dim, &dos);
      const float* l = At(lse, b, h, 1);
      const float* dl = At(delta, b, h, 1);
      for (int64_t r = 0; r < n; ++r) {
        lse_rows[r] = l[r * lse.heads];
        delta_rows[r] = dl[r * delta.heads];
      }
      BlockBackward(qr, kr, vr, {dor.data, dor.rows, dor.stride, q.positions}, lse_rows.data(),
                    delta_rows.data(), d, p.scale, mask, {At(dq, b, h, p.dim), n, dq.heads * d},
                    {At(dk, b, kh, p.dim), dk.rows, dk.heads * d},
                    {At(dv, b, kh, p.dim), dv.rows, dv.heads * d});
    }
  }
}

void HostMergePartial(float* o, float* lse, const float* o_in, const float* lse_in, int64_t count,
                      int32_t dim) {
  // Each of the `count` rows is its own (1 x dim) merge.
  for (int64_t r = 0; r < count; ++r) {
    MergePartial({o + r * dim, 1, dim}, lse + r, o_in + r * dim, dim, lse_in + r, dim);
  }
}

void HostAddInto(float* acc, const float* in, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] += in[i];
}

void HostDelta(InputType type, const float* o, const void* d_o, float* delta, int64_t batch,
               int64_t rows, int32_t heads, int32_t dim) {
  const int64_t count = batch * rows * heads;
  for (int64_t i = 0; i < count; ++i) {
    float sum = 0;
    for (int32_t e = 0; e < dim; ++e) sum += o[i * dim + e] * InputAt(type, d_o, i * dim + e);
    delta[i] = sum;
  }
}

void HostFill(float* data, float value, int64_t n) {
  for (int64_t i = 0; i < n; ++i) data[i] = value;
}

void HostRowCopy(const RowCopy& c) {
  const auto* src = static_cast<const char*>(c.src);
  auto* dst = static_cast<char*>(c.dst);
  const size_t run = static_cast<size_t>(c.copy_heads) * c.dim * c.elem_bytes;
  for (int64_t b = 0; b < c.batch; ++b) {
    for (int64_t i = 0; i < c.count; ++i) {
      const int64_t sr = c.src_rows != nullptr ? c.src_rows[i] : c.src_row0 + i;
      const int64_t dr = c.dst_row0 + i;
      const char* from =
          src + (((b * c.src_rows_total + sr) * c.src_heads + c.src_head0) * c.dim) * c.elem_bytes;
      char* to =
          dst + (((b * c.dst_rows_total + dr) * c.dst_heads + c.dst_head0) * c.dim) * c.elem_bytes;
      std::memcpy(to, from, run);
    }
  }
}

}  // namespace meshplan::exec
