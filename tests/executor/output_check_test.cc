// The check of a run's outputs (executor/output_check.h): its error measure on hand-made tensors,
// and that a run with exact outputs passes while a perturbed one fails.
#include "executor/output_check.h"

#include <gtest/gtest.h>

#include <cmath>

#include "executor/kernels/reference.h"

namespace meshplan::exec {
namespace {

TEST(OutputCheck, MaxRelativeErrorIsTheWorstDifferenceOverTheLargestReference) {
  TensorF got(1, 3, 1, 1);
  TensorD want(1, 3, 1, 1);
  got.data = {1.0f, 2.5f, -INFINITY};
  want.data = {1.0, 2.0, -INFINITY};
  // worst |x - ref| = |2.5 - 2| = 0.5 over max |ref| = 2 (the -inf reference is matched exactly
  // and left out): 0.25.
  EXPECT_DOUBLE_EQ(MaxRelativeError(got, want), 0.25);
  got.data[2] = 0.0f;  // a finite value where the reference is -inf
  EXPECT_TRUE(std::isinf(MaxRelativeError(got, want)));
  got.data[2] = -INFINITY;
  got.data[0] = NAN;  // NaNs never pass
  EXPECT_TRUE(std::isinf(MaxRelativeError(got, want)));
}

TEST(OutputCheck, ExactOutputsPassAndAPerturbedGradientFails) {
  Workload w;
  w.seq_len = 16;
  w.q_heads = 2;
  w.kv_heads = 1;
  w.head_dim = 4;
  w.mask = Mask::Causal();
  w.pass = Pass::kForwardBackward;
  ASSERT_TRUE(w.Validate().ok());
  AttentionTensors<double> ref = RandomInputs(w, 9);
  ReferenceForward(w, ref);
  ReferenceBackward(w, ref);
  AttentionTensors<float> in, out;
  in.q = ToFloat(ref.q);
  in.k = ToFloat(ref.k);
  in.v = ToFloat(ref.v);
  in.d_o = ToFloat(ref.d_o);
  out.o = ToFloat(ref.o);
  out.lse = ToFloat(ref.lse);
  out.dq = ToFloat(ref.dq);
  out.dk = ToFloat(ref.dk);
  out.dv = ToFloat(ref.dv);
  const double tolerance = CheckTolerance(InputType::kFp32);
  EXPECT_DOUBLE_EQ(tolerance, 1e-4);
  // The reference recomputed from the float inputs differs from `out` only by float rounding of
  // inputs and outputs (relative 2^-24 each), far below 1e-4.
  const OutputCheck exact = CheckOutputs(w, in, out, tolerance);
  ASSERT_EQ(exact.errors.size(), 5u);  // O, LSE, dQ, dK, dV
  EXPECT_TRUE(exact.passed());
  // Moving one dK element by 1% of the largest |dK| is a relative error of 1e-2 > 1e-4.
  double largest = 0;
  for (float x : out.dk.data) largest = std::max(largest, std::abs(static_cast<double>(x)));
  out.dk.data[3] += static_cast<float>(0.01 * largest);
  const OutputCheck perturbed = CheckOutputs(w, in, out, tolerance);
  EXPECT_FALSE(perturbed.passed());
  EXPECT_EQ(perturbed.errors[3].first, "dK");
  EXPECT_NEAR(perturbed.errors[3].second, 0.01, 1e-4);
}

}  // namespace
}  // namespace meshplan::exec
