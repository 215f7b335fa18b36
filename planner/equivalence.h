// Equivalent plans: candidates that cost the same, so that a ranking shows them as one tie rather
// than as a string of "wins" decided by rounding (e.g. double rings with windows 2, 4, 8 and 16).
#pragma once

#include <cstddef>
#include <vector>

#include "planner/estimate.h"

namespace meshplan::planner {

// Relative time difference up to which two plans count as equally fast: 0.5%.
inline constexpr double kEquivalentTimeTolerance = 0.005;

// The model's error, measured: the median |error| of its estimates on published measurements of
// GPU clusters (bench/published.py: 4.4% over 58 points, rounded up; the CPU fidelity table's
// median is 3-5%). Plans whose times differ by less cannot be told apart by the model, and the
// plan table says so (WithinModelError). bench/published.py fails when its median exceeds it.
inline constexpr double kModelErrorFraction = 0.05;

// The plans the model cannot tell apart from the best one that fits: those that fit and whose
// RankingSeconds is within kModelErrorFraction of its, as indices into `ranked` in ranking order
// (the best first); empty when no plan fits.
std::vector<size_t> WithinModelError(const std::vector<Estimate>& ranked);

// The time a ranking orders a plan by: with a model, the time of all its layers
// (Estimate::model_layers_s); else its simulated time when it was replayed (RerankBySimulation),
// else its estimated time.
double RankingSeconds(const Estimate& estimate);

// Whether `other` is equivalent to `representative`, a plan ranked before it. All of:
// - both fit in memory, or neither does;
// - both were simulated, or neither was (a simulated and an estimated time are not compared);
// - |RankingSeconds(other) - RankingSeconds(representative)| <= time_tolerance *
// RankingSeconds(representative);
// - the same bytes per GPU, in total and over each network level (equal up to floating-point
//   rounding: a relative difference of at most 1e-12, well under one byte below a terabyte).
// Peak memory, imbalance and parameters may differ.
bool IsEquivalent(const Estimate& representative, const Estimate& other,
                  double time_tolerance = kEquivalentTimeTolerance);

// A set of equivalent plans, as indices into the ranked list, in ranking order; the first is the
// group's representative.
struct PlanGroup {
  std::vector<size_t> members;
  size_t representative() const { return members.front(); }
  size_t equivalents() const { return members.size() - 1; }  // plans besides the representative
};

// Groups a ranked list (planner/search.h: SearchResult::ranked). Equivalence with a tolerance is
// not transitive (A ~ B and B ~ C need not give A ~ C), so groups are anchored on their
// representative: in ranking order, each plan joins the first group whose representative it is
// equivalent to (IsEquivalent), or else starts a new group. Every member is therefore within the
// tolerance of its representative, and no chain of small differences adds up inside a group.
// Groups come in the order of their representatives; every index appears in exactly one group.
std::vector<PlanGroup> GroupEquivalentPlans(const std::vector<Estimate>& ranked,
                                            double time_tolerance = kEquivalentTimeTolerance);

}  // namespace meshplan::planner
