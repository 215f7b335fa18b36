#include "executor/kernels/reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

namespace meshplan::exec {
namespace {

Workload ReferenceWorkload(int64_t batch, int64_t seq, int64_t q_heads, int64_t kv_heads,
                           int64_t dim, Mask mask) {
  Workload w;
  w.batch = batch;
  w.seq_len = seq;
  w.q_heads = q_heads;
  w.kv_heads = kv_heads;
  w.head_dim = dim;
  w.mask = std::move(mask);
  EXPECT_TRUE(w.Validate().ok()) << w.Validate().message();
  return w;
}

// Zero tensors of the right shapes, for hand-filled cases.
AttentionTensors<double> ZeroInputs(const Workload& w) {
  AttentionTensors<double> t;
  t.q = TensorD(w.batch, w.seq_len, w.q_heads, w.head_dim);
  t.k = TensorD(w.batch, w.seq_len, w.kv_heads, w.head_dim);
  t.v = TensorD(w.batch, w.seq_len, w.kv_heads, w.head_dim);
  t.d_o = TensorD(w.batch, w.seq_len, w.q_heads, w.head_dim);
  return t;
}

// S = 2, d = 1 (scale 1), one head. q = (1, 2), k = (0.5, 0.5 + ln 3), v = (1, 5).
//   row 0 scores 0.5 and 0.5 + ln 3: weights 1/4, 3/4; O = 1/4 + 15/4 = 4; LSE = 0.5 + ln 4.
//   row 1 scores 1 and 1 + 2 ln 3:   weights 1/10, 9/10; O = 0.1 + 4.5 = 4.6; LSE = 1 + ln 10.
// Causal: row 0 sees key 0 only, so O = v0 = 1 and LSE = q0 k0 = 0.5; row 1 is as under full.
AttentionTensors<double> TwoTokenInputs(const Workload& w) {
  AttentionTensors<double> t = ZeroInputs(w);
  t.q.at(0, 0, 0, 0) = 1.0;
  t.q.at(0, 1, 0, 0) = 2.0;
  t.k.at(0, 0, 0, 0) = 0.5;
  t.k.at(0, 1, 0, 0) = 0.5 + std::log(3.0);
  t.v.at(0, 0, 0, 0) = 1.0;
  t.v.at(0, 1, 0, 0) = 5.0;
  return t;
}

TEST(ReferenceForwardTest, TwoTokensFullMaskByHand) {
  const Workload w = ReferenceWorkload(1, 2, 1, 1, 1, Mask::Full());
  AttentionTensors<double> t = TwoTokenInputs(w);
  ReferenceForward(w, t);
  EXPECT_NEAR(t.o.at(0, 0, 0, 0), 4.0, 1e-14);
  EXPECT_NEAR(t.lse.at(0, 0, 0, 0), 0.5 + std::log(4.0), 1e-14);
  EXPECT_NEAR(t.o.at(0, 1, 0, 0), 4.6, 1e-14);
  EXPECT_NEAR(t.lse.at(0, 1, 0, 0), 1.0 + std::log(10.0), 1e-14);
}

TEST(ReferenceForwardTest, TwoTokensCausalByHand) {
  const Workload w = ReferenceWorkload(1, 2, 1, 1, 1, Mask::Causal());
  AttentionTensors<double> t = TwoTokenInputs(w);
  ReferenceForward(w, t);
  EXPECT_NEAR(t.o.at(0, 0, 0, 0), 1.0, 1e-14);
  EXPECT_NEAR(t.lse.at(0, 0, 0, 0), 0.5, 1e-14);
  EXPECT_NEAR(t.o.at(0, 1, 0, 0), 4.6, 1e-14);
  EXPECT_NEAR(t.lse.at(0, 1, 0, 0), 1.0 + std::log(10.0), 1e-14);
}

// d = 4, so scale = 1/2. q0 = (1, 1, 0, 0), k0 = (1, 0, 0, 0), k1 = (1, 1, 0, 0): q0.k0 = 1 and
// q0.k1 = 2, scaled 0.5 and 1. v0 = (1, 0, 0, 0), v1 = (0, 1, 0, 0).
TEST(ReferenceForwardTest, ScoresAreScaledByOneOverSqrtD) {
  for (const Mask& mask : {Mask::Full(), Mask::Causal()}) {
    const Workload w = ReferenceWorkload(1, 2, 1, 1, 4, mask);
    AttentionTensors<double> t = ZeroInputs(w);
    t.q.at(0, 0, 0, 0) = 1.0;
    t.q.at(0, 0, 0, 1) = 1.0;
    t.k.at(0, 0, 0, 0) = 1.0;
    t.k.at(0, 1, 0, 0) = 1.0;
    t.k.at(0, 1, 0, 1) = 1.0;
    t.v.at(0, 0, 0, 0) = 1.0;
    t.v.at(0, 1, 0, 1) = 1.0;
    ReferenceForward(w, t);
    if (mask.kind == MaskKind::kFull) {
      const double e0 = std::exp(0.5), e1 = std::exp(1.0);
      EXPECT_NEAR(t.lse.at(0, 0, 0, 0), std::log(e0 + e1), 1e-14);
      EXPECT_NEAR(t.o.at(0, 0, 0, 0), e0 / (e0 + e1), 1e-14);
      EXPECT_NEAR(t.o.at(0, 0, 0, 1), e1 / (e0 + e1), 1e-14);
    } else {
      EXPECT_NEAR(t.lse.at(0, 0, 0, 0), 0.5, 1e-14);
      EXPECT_NEAR(t.o.at(0, 0, 0, 0), 1.0, 1e-14);
      EXPECT_NEAR(t.o.at(0, 0, 0, 1), 0.0, 1e-14);
    }
    EXPECT_EQ(t.o.at(0, 0, 0, 2), 0.0);
    EXPECT_EQ(t.o.at(0, 0, 0, 3), 0.0);
  }
}

// With k = 0 every visible score is 0, so O_i is the mean of v over the keys row i sees and
// LSE_i = log(number of keys seen). v_j = 2^j makes the mean identify the set. The visible sets
// below are written out by hand from the mask definitions in core/sequence/mask.h (S = 6).
struct VisibleSetCase {
  std::string name;
  Mask mask;
  std::vector<std::vector<int>> visible;  // visible[i] = keys query i sees
};

TEST(ReferenceForwardTest, MaskStructureMatchesHandWrittenVisibleSets) {
  const std::vector<VisibleSetCase> cases = {
      {"full",
       Mask::Full(),
       {{0, 1, 2, 3, 4, 5},
        {0, 1, 2, 3, 4, 5},
        {0, 1, 2, 3, 4, 5},
        {0, 1, 2, 3, 4, 5},
        {0, 1, 2, 3, 4, 5},
        {0, 1, 2, 3, 4, 5}}},
      {"causal",
       Mask::Causal(),
       {{0}, {0, 1}, {0, 1, 2}, {0, 1, 2, 3}, {0, 1, 2, 3, 4}, {0, 1, 2, 3, 4, 5}}},
      {"window:1", Mask::Window(1), {{0}, {1}, {2}, {3}, {4}, {5}}},
      {"window:2", Mask::Window(2), {{0}, {0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}}},
      {"window:3", Mask::Window(3), {{0}, {0, 1}, {0, 1, 2}, {1, 2, 3}, {2, 3, 4}, {3, 4, 5}}},
      {"window:10",
       Mask::Window(10),
       {{0}, {0, 1}, {0, 1, 2}, {0, 1, 2, 3}, {0, 1, 2, 3, 4}, {0, 1, 2, 3, 4, 5}}},
      {"docs:2,3,1", Mask::Documents({2, 3, 1}), {{0}, {0, 1}, {2}, {2, 3}, {2, 3, 4}, {5}}},
      {"docs:1,1,4", Mask::Documents({1, 1, 4}), {{0}, {1}, {2}, {2, 3}, {2, 3, 4}, {2, 3, 4, 5}}},
      {"docs:6",
       Mask::Documents({6}),
       {{0}, {0, 1}, {0, 1, 2}, {0, 1, 2, 3}, {0, 1, 2, 3, 4}, {0, 1, 2, 3, 4, 5}}},
  };
  for (const VisibleSetCase& c : cases) {
    SCOPED_TRACE(c.name);
    const Workload w = ReferenceWorkload(2, 6, 2, 1, 1, c.mask);
    AttentionTensors<double> t = ZeroInputs(w);
    for (int64_t b = 0; b < 2; ++b) {
      for (int64_t j = 0; j < 6; ++j) {
        t.v.at(b, j, 0, 0) = std::ldexp(1.0, static_cast<int>(j));
        for (int64_t h = 0; h < 2; ++h) t.q.at(b, j, h, 0) = 0.25 * static_cast<double>(j + h + b);
      }
    }
    ReferenceForward(w, t);
    for (int64_t b = 0; b < 2; ++b) {
      for (int64_t h = 0; h < 2; ++h) {
        for (int64_t i = 0; i < 6; ++i) {
          const std::vector<int>& seen = c.visible[static_cast<size_t>(i)];
          double mean = 0.0;
          for (int j : seen) mean += std::ldexp(1.0, j);
          mean /= static_cast<double>(seen.size());
          EXPECT_NEAR(t.o.at(b, i, h, 0), mean, 1e-13) << "b=" << b << " h=" << h << " row " << i;
          EXPECT_NEAR(t.lse.at(b, i, h, 0), std::log(static_cast<double>(seen.size())), 1e-14)
              << "b=" << b << " h=" << h << " row " << i;
        }
      }
    }
  }
}

// Hq = 4, Hkv = 2, S = 1: the only key is the row's own, so O[h] = v[h / 2] exactly and
// LSE[h] = scale * q[h].k[h / 2]. Backward with S = 1: P = 1, so dV[g] = sum of dO over the two
// query heads of group g; dP = dO.v = D, so dS = 0 and dQ = dK = 0.
TEST(ReferenceTest, GqaHeadMappingAndKvGradientAccumulation) {
  const Workload w = ReferenceWorkload(1, 1, 4, 2, 2, Mask::Full());
  AttentionTensors<double> t = ZeroInputs(w);
  const double scale = 1.0 / std::sqrt(2.0);
  for (int64_t g = 0; g < 2; ++g) {
    t.k.at(0, 0, g, 0) = 1.0 + static_cast<double>(g);
    t.k.at(0, 0, g, 1) = -0.5;
    t.v.at(0, 0, g, 0) = 10.0 * static_cast<double>(g + 1);
    t.v.at(0, 0, g, 1) = -3.0 * static_cast<double>(g + 1);
  }
  for (int64_t h = 0; h < 4; ++h) {
    t.q.at(0, 0, h, 0) = 0.1 * static_cast<double>(h + 1);
    t.q.at(0, 0, h, 1) = 0.3;
    t.d_o.at(0, 0, h, 0) = static_cast<double>(h + 1);
    t.d_o.at(0, 0, h, 1) = 0.5 * static_cast<double>(h);
  }
  ReferenceForward(w, t);
  for (int64_t h = 0; h < 4; ++h) {
    const int64_t g = h / 2;
    EXPECT_NEAR(t.o.at(0, 0, h, 0), 10.0 * static_cast<double>(g + 1), 1e-14) << "head " << h;
    EXPECT_NEAR(t.o.at(0, 0, h, 1), -3.0 * static_cast<double>(g + 1), 1e-14) << "head " << h;
    const double qk =
        0.1 * static_cast<double>(h + 1) * (1.0 + static_cast<double>(g)) + 0.3 * -0.5;
    EXPECT_NEAR(t.lse.at(0, 0, h, 0), scale * qk, 1e-14) << "head " << h;
  }
  ReferenceBackward(w, t);
  // Group 0 = heads 0, 1: dO = (1, 0) + (2, 0.5); group 1 = heads 2, 3: (3, 1) + (4, 1.5).
  EXPECT_NEAR(t.dv.at(0, 0, 0, 0), 3.0, 1e-14);
  EXPECT_NEAR(t.dv.at(0, 0, 0, 1), 0.5, 1e-14);
  EXPECT_NEAR(t.dv.at(0, 0, 1, 0), 7.0, 1e-14);
  EXPECT_NEAR(t.dv.at(0, 0, 1, 1), 2.5, 1e-14);
  for (double x : t.dq.data) EXPECT_NEAR(x, 0.0, 1e-13);
  for (double x : t.dk.data) EXPECT_NEAR(x, 0.0, 1e-13);
}

// For every causal-family mask the diagonal is visible, so row 0 sees key 0 alone:
// LSE = scale * q0.k0 and O = v0 (of the head's KV head).
TEST(ReferenceForwardTest, RowZeroOfCausalFamilySeesOnlyKeyZero) {
  for (const Mask& mask : {Mask::Causal(), Mask::Window(3), Mask::Documents({3, 5, 1})}) {
    SCOPED_TRACE(mask.ToString());
    const Workload w = ReferenceWorkload(2, 9, 4, 2, 5, mask);
    AttentionTensors<double> t = RandomInputs(w, 7);
    ReferenceForward(w, t);
    const double scale = 1.0 / std::sqrt(5.0);
    for (int64_t b = 0; b < 2; ++b) {
      for (int64_t h = 0; h < 4; ++h) {
        double qk = 0.0;
        for (int64_t e = 0; e < 5; ++e) qk += t.q.at(b, 0, h, e) * t.k.at(b, 0, h / 2, e);
        EXPECT_NEAR(t.lse.at(b, 0, h, 0), scale * qk, 1e-14);
        for (int64_t e = 0; e < 5; ++e)
          EXPECT_NEAR(t.o.at(b, 0, h, e), t.v.at(b, 0, h / 2, e), 1e-14);
      }
    }
  }
}

void ExpectSameOutputs(const AttentionTensors<double>& a, const AttentionTensors<double>& b) {
  EXPECT_EQ(a.o.data, b.o.data);
  EXPECT_EQ(a.lse.data, b.lse.data);
  EXPECT_EQ(a.dq.data, b.dq.data);
  EXPECT_EQ(a.dk.data, b.dk.data);
  EXPECT_EQ(a.dv.data, b.dv.data);
}

TEST(ReferenceTest, WindowAtLeastSeqAndSingleDocumentEqualCausal) {
  const int64_t S = 37;
  const Workload causal = ReferenceWorkload(2, S, 4, 2, 8, Mask::Causal());
  AttentionTensors<double> expected = RandomInputs(causal, 11);
  ReferenceForward(causal, expected);
  ReferenceBackward(causal, expected);
  for (const Mask& mask :
       {Mask::Window(S), Mask::Window(S + 1), Mask::Window(1000), Mask::Documents({S})}) {
    SCOPED_TRACE(mask.ToString());
    const Workload w = ReferenceWorkload(2, S, 4, 2, 8, mask);
    AttentionTensors<double> t = RandomInputs(w, 11);
    ReferenceForward(w, t);
    ReferenceBackward(w, t);
    ExpectSameOutputs(t, expected);
  }
}

TEST(ReferenceTest, WindowSmallerThanSeqDiffersFromCausal) {
  const Workload causal = ReferenceWorkload(1, 20, 2, 2, 4, Mask::Causal());
  const Workload window = ReferenceWorkload(1, 20, 2, 2, 4, Mask::Window(19));
  AttentionTensors<double> a = RandomInputs(causal, 5), b = RandomInputs(window, 5);
  ReferenceForward(causal, a);
  ReferenceForward(window, b);
  // Only the last row (q = 19) loses key 0.
  for (int64_t i = 0; i < 19; ++i) EXPECT_EQ(a.lse.at(0, i, 0, 0), b.lse.at(0, i, 0, 0)) << i;
  EXPECT_NE(a.lse.at(0, 19, 0, 0), b.lse.at(0, 19, 0, 0));
}

TEST(ReferenceTest, RandomInputsAreReproducibleAndShaped) {
  const Workload w = ReferenceWorkload(2, 5, 6, 3, 4, Mask::Causal());
  const AttentionTensors<double> a = RandomInputs(w, 42), b = RandomInputs(w, 42),
                                 c = RandomInputs(w, 43);
  auto expect_shape = [](const TensorD& t, int64_t b, int64_t s, int64_t h, int64_t d) {
    EXPECT_EQ(t.batch, b);
    EXPECT_EQ(t.tokens, s);
    EXPECT_EQ(t.heads, h);
    EXPECT_EQ(t.dim, d);
    EXPECT_EQ(t.size(), b * s * h * d);
  };
  expect_shape(a.q, 2, 5, 6, 4);
  expect_shape(a.k, 2, 5, 3, 4);
  expect_shape(a.v, 2, 5, 3, 4);
  expect_shape(a.d_o, 2, 5, 6, 4);
  expect_shape(a.o, 2, 5, 6, 4);
  expect_shape(a.lse, 2, 5, 6, 1);
  expect_shape(a.dq, 2, 5, 6, 4);
  expect_shape(a.dk, 2, 5, 3, 4);
  expect_shape(a.dv, 2, 5, 3, 4);
  for (const TensorD* t : {&a.q, &a.k, &a.v, &a.d_o}) {
    bool any_nonzero = false;
    for (double x : t->data) {
      EXPECT_GE(x, -1.0);
      EXPECT_LT(x, 1.0);
      any_nonzero = any_nonzero || x != 0.0;
    }
    EXPECT_TRUE(any_nonzero);
  }
  for (const TensorD* t : {&a.o, &a.lse, &a.dq, &a.dk, &a.dv}) {
    for (double x : t->data) EXPECT_EQ(x, 0.0);
  }
  EXPECT_EQ(a.q.data, b.q.data);
  EXPECT_EQ(a.k.data, b.k.data);
  EXPECT_EQ(a.v.data, b.v.data);
  EXPECT_EQ(a.d_o.data, b.d_o.data);
  EXPECT_NE(a.q.data, c.q.data);
  EXPECT_NE(a.q.data, a.k.data);  // each tensor gets its own draws
}

// Gradients against central finite differences of L = sum(O * dO), which is exactly the loss
// whose gradient the backward computes (dO is dL/dO). Error measured normwise per tensor:
// max |fd - analytic| <= 1e-6 * max |analytic|.
struct GradCase {
  std::string name;
  Mask mask;
  int64_t kv_heads;
};

void PrintTo(const GradCase& c, std::ostream* os) { *os << c.name; }

class ReferenceGradientTest : public ::testing::TestWithParam<GradCase> {};

double Loss(const Workload& w, AttentionTensors<double> t) {
  ReferenceForward(w, t);
  double loss = 0.0;
  for (size_t i = 0; i < t.o.data.size(); ++i) loss += t.o.data[i] * t.d_o.data[i];
  return loss;
}

void CheckAgainstFiniteDifferences(const Workload& w, const AttentionTensors<double>& inputs,
                                   TensorD AttentionTensors<double>::*input,
                                   const TensorD& analytic, const char* name) {
  SCOPED_TRACE(name);
  const double step = 1e-5;
  double max_grad = 0.0, max_err = 0.0;
  for (size_t i = 0; i < analytic.data.size(); ++i) {
    AttentionTensors<double> plus = inputs, minus = inputs;
    (plus.*input).data[i] += step;
    (minus.*input).data[i] -= step;
    const double fd = (Loss(w, plus) - Loss(w, minus)) / (2.0 * step);
    max_grad = std::max(max_grad, std::abs(analytic.data[i]));
    max_err = std::max(max_err, std::abs(fd - analytic.data[i]));
  }
  EXPECT_GT(max_grad, 1e-3);  // the check is not vacuous
  EXPECT_LT(max_err, 1e-6 * max_grad) << "max error " << max_err << ", max gradient " << max_grad;
}

TEST_P(ReferenceGradientTest, MatchesCentralDifferences) {
  const GradCase& c = GetParam();
  const Workload w = ReferenceWorkload(2, 7, 4, c.kv_heads, 3, c.mask);
  const AttentionTensors<double> inputs = RandomInputs(w, 1234);
  AttentionTensors<double> t = inputs;
  ReferenceForward(w, t);
  ReferenceBackward(w, t);
  CheckAgainstFiniteDifferences(w, inputs, &AttentionTensors<double>::q, t.dq, "dQ");
  CheckAgainstFiniteDifferences(w, inputs, &AttentionTensors<double>::k, t.dk, "dK");
  CheckAgainstFiniteDifferences(w, inputs, &AttentionTensors<double>::v, t.dv, "dV");
}

std::vector<GradCase> GradCases() {
  std::vector<GradCase> cases;
  const std::vector<std::pair<std::string, Mask>> masks = {
      {"Full", Mask::Full()},
      {"Causal", Mask::Causal()},
      {"Window3", Mask::Window(3)},
      {"DocsUneven", Mask::Documents({1, 4, 2})},
  };
  for (const auto& [name, mask] : masks) {
    cases.push_back({name + "Mha", mask, 4});
    cases.push_back({name + "Gqa2", mask, 2});
    cases.push_back({name + "Gqa4", mask, 1});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllMasks, ReferenceGradientTest, ::testing::ValuesIn(GradCases()),
                         [](const ::testing::TestParamInfo<GradCase>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace meshplan::exec
