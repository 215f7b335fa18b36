// Checks a run's outputs against plain attention in double precision
// (executor/kernels/reference.h), computed on exactly the float inputs the run saw.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/workload/workload.h"
#include "executor/device/kernel_args.h"
#include "executor/io/tensor.h"

namespace meshplan::exec {

// The tolerance of a run whose inputs the kernels read as `type` (max relative error, below). fp32
// (the host backend): fp32 arithmetic on the float inputs, 1e-4. bf16 and fp16: the inputs are
// rounded to the type before the run and the reference sees the same rounded values, so what
// remains is the kernels' rounding of P and dS to that type before the tensor-core products and
// fp32 accumulation: bf16 keeps 8 significant bits (unit roundoff 2^-9 = 2e-3), allowed 10x that;
// fp16 keeps 11 (2^-12 = 2.4e-4), allowed about 20x.
double CheckTolerance(InputType type);

// max |x - ref| / max |ref| over the finite reference values; a non-finite result where the
// reference is finite (or an LSE of -inf where the reference has one, the other way round) is an
// infinite error, so NaNs never pass.
double MaxRelativeError(const TensorF& got, const TensorD& want);

struct OutputCheck {
  double tolerance = 0;
  std::vector<std::pair<std::string, double>> errors;  // tensor name, max relative error
  bool passed() const;
};

// O and LSE, and dQ, dK, dV for a backward, of `out` against the reference on `in`.
OutputCheck CheckOutputs(const Workload& w, const AttentionTensors<float>& in,
                         const AttentionTensors<float>& out, double tolerance);

}  // namespace meshplan::exec
