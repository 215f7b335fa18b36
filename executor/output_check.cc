#include "executor/output_check.h"

#include <algorithm>
#include <cmath>

#include "executor/kernels/reference.h"

namespace meshplan::exec {

double CheckTolerance(InputType type) {
  switch (type) {
    case InputType::kFp32:
      return 1e-4;
    case InputType::kBf16:
      return 2e-2;
    case InputType::kFp16:
      return 5e-3;
  }
  return 0;
}

bool OutputCheck::passed() const {
  for (const auto& [name, error] : errors) {
    if (!(error <= tolerance)) return false;
  }
  return true;
}

double MaxRelativeError(const TensorF& got, const TensorD& want) {
  double worst = 0, scale = 0;
  for (size_t i = 0; i < want.data.size(); ++i) {
    const double x = got.data[i], ref = want.data[i];
    if (!std::isfinite(ref)) {
      if (!(x == ref)) return INFINITY;
      continue;
    }
    if (!std::isfinite(x)) return INFINITY;
    worst = std::max(worst, std::abs(x - ref));
    scale = std::max(scale, std::abs(ref));
  }
  return scale > 0 ? worst / scale : worst;
}

OutputCheck CheckOutputs(const Workload& w, const AttentionTensors<float>& in,
                         const AttentionTensors<float>& out, double tolerance) {
  // The reference sees exactly the float inputs the executor saw, in double.
  AttentionTensors<double> ref;
  ref.q = ToDouble(in.q);
  ref.k = ToDouble(in.k);
  ref.v = ToDouble(in.v);
  ref.o = TensorD(w.batch, w.seq_len, w.q_heads, w.head_dim);
  ref.lse = TensorD(w.batch, w.seq_len, w.q_heads, 1);
  ReferenceForward(w, ref);
  OutputCheck c;
  c.tolerance = tolerance;
  c.errors.push_back({"O", MaxRelativeError(out.o, ref.o)});
  c.errors.push_back({"LSE", MaxRelativeError(out.lse, ref.lse)});
  if (HasBackward(w.pass)) {
    ref.d_o = ToDouble(in.d_o);
    ref.dq = TensorD(w.batch, w.seq_len, w.q_heads, w.head_dim);
    ref.dk = TensorD(w.batch, w.seq_len, w.kv_heads, w.head_dim);
    ref.dv = TensorD(w.batch, w.seq_len, w.kv_heads, w.head_dim);
    ReferenceBackward(w, ref);
    c.errors.push_back({"dQ", MaxRelativeError(out.dq, ref.dq)});
    c.errors.push_back({"dK", MaxRelativeError(out.dk, ref.dk)});
    c.errors.push_back({"dV", MaxRelativeError(out.dv, ref.dv)});
  }
  return c;
}

}  // namespace meshplan::exec
