#include "planner/equivalence.h"

#include <algorithm>
#include <cmath>

namespace meshplan::planner {
namespace {

// Byte counts come from formulas that may round differently in their last bits.
constexpr double kSameBytesTolerance = 1e-12;

bool SameBytes(double a, double b) {
  return std::fabs(a - b) <= kSameBytesTolerance * std::max(std::fabs(a), std::fabs(b));
}

}  // namespace

double RankingSeconds(const Estimate& e) {
  if (e.model_layers_s >= 0) return e.model_layers_s;
  return e.simulated_s >= 0 ? e.simulated_s : e.time_s;
}

std::vector<size_t> WithinModelError(const std::vector<Estimate>& ranked) {
  std::vector<size_t> out;
  const auto best =
      std::find_if(ranked.begin(), ranked.end(), [](const Estimate& e) { return e.fits; });
  if (best == ranked.end()) return out;
  const double limit = RankingSeconds(*best) * (1 + kModelErrorFraction);
  for (size_t i = 0; i < ranked.size(); ++i) {
    if (ranked[i].fits && RankingSeconds(ranked[i]) <= limit) out.push_back(i);
  }
  return out;
}

bool IsEquivalent(const Estimate& representative, const Estimate& other, double time_tolerance) {
  if (representative.fits != other.fits) return false;
  if ((representative.simulated_s >= 0) != (other.simulated_s >= 0)) return false;
  const double base_s = RankingSeconds(representative);
  if (std::fabs(RankingSeconds(other) - base_s) > time_tolerance * base_s) return false;
  if (!SameBytes(representative.bytes_per_rank, other.bytes_per_rank)) return false;
  if (representative.level_bytes.size() != other.level_bytes.size()) return false;
  for (size_t l = 0; l < other.level_bytes.size(); ++l) {
    if (!SameBytes(representative.level_bytes[l], other.level_bytes[l])) return false;
  }
  return true;
}

std::vector<PlanGroup> GroupEquivalentPlans(const std::vector<Estimate>& ranked,
                                            double time_tolerance) {
  std::vector<PlanGroup> groups;
  for (size_t i = 0; i < ranked.size(); ++i) {
    const auto joined = std::find_if(groups.begin(), groups.end(), [&](const PlanGroup& g) {
      return IsEquivalent(ranked[g.representative()], ranked[i], time_tolerance);
    });
    if (joined != groups.end()) {
      joined->members.push_back(i);
    } else {
      groups.push_back(PlanGroup{{i}});
    }
  }
  return groups;
}

}  // namespace meshplan::planner
