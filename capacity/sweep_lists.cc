#include "capacity/sweep_lists.h"

#include <algorithm>
#include <limits>
#include <unordered_set>

#include "core/base/units.h"
#include "planner/schemes/registry.h"

namespace meshplan::capacity {

Result<std::vector<int64_t>> ParseCountList(const std::string& text, const std::string& what) {
  auto fail = [&](const std::string& why) { return Status::Invalid(what + ": " + why); };
  std::vector<int64_t> out;
  std::unordered_set<int64_t> seen;  // a set, so a list of kMaxListValues values costs no n^2
  auto add = [&](int64_t v) {
    if (seen.insert(v).second) out.push_back(v);
  };
  if (text.find_first_not_of(" \t") == std::string::npos) return fail("empty list");
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    std::string item = text.substr(start, comma - start);
    start = comma + 1;
    const size_t first = item.find_first_not_of(" \t"), last = item.find_last_not_of(" \t");
    if (first == std::string::npos) return fail("empty item in list '" + text + "'");
    item = item.substr(first, last - first + 1);
    const size_t dots = item.find("..");
    if (dots == std::string::npos) {
      auto value = ParseCount(item);
      if (!value.ok()) return value.status().WithContext(what);
      add(*value);
      continue;
    }
    std::string lo_text = item.substr(0, dots), hi_text = item.substr(dots + 2), step_text;
    const size_t colon = hi_text.find(':');
    if (colon != std::string::npos) {
      step_text = hi_text.substr(colon + 1);
      hi_text = hi_text.substr(0, colon);
    }
    if (lo_text.empty() || hi_text.empty()) {
      return fail("range '" + item + "' needs both ends (LO..HI)");
    }
    auto lo = ParseCount(lo_text);
    if (!lo.ok()) return lo.status().WithContext(what + ": range '" + item + "'");
    auto hi = ParseCount(hi_text);
    if (!hi.ok()) return hi.status().WithContext(what + ": range '" + item + "'");
    if (*hi < *lo) {
      return fail("range '" + item + "' is reversed (" + std::to_string(*lo) + " > " +
                  std::to_string(*hi) + ")");
    }
    bool additive = false;
    int64_t step = 2;  // doubling by default
    if (colon != std::string::npos) {
      if (step_text.size() < 2 || (step_text[0] != '+' && step_text[0] != '*')) {
        return fail("range '" + item + "': step must be :+N (add N) or :*N (multiply by N)");
      }
      additive = step_text[0] == '+';
      auto s = ParseCount(step_text.substr(1));
      if (!s.ok()) return s.status().WithContext(what + ": range '" + item + "': step");
      step = *s;
      if (!additive && step < 2) return fail("range '" + item + "': factor must be at least 2");
    }
    for (int64_t v = *lo; v <= *hi;) {
      add(v);
      if (out.size() > kMaxListValues) {
        return fail("range '" + item + "' has more than " + std::to_string(kMaxListValues) +
                    " values");
      }
      if (additive ? v > std::numeric_limits<int64_t>::max() - step
                   : v > std::numeric_limits<int64_t>::max() / step) {
        break;
      }
      v = additive ? v + step : v * step;
    }
  }
  return out;
}

Result<std::vector<Scheme>> ParseSchemeList(const std::vector<std::string>& names,
                                            const std::string& what) {
  std::vector<Scheme> out;
  for (const std::string& name : names) {
    auto scheme = planner::ParseScheme(name);
    if (!scheme.ok()) return scheme.status().WithContext(what);
    if (std::find(out.begin(), out.end(), *scheme) == out.end()) out.push_back(*scheme);
  }
  if (out.empty()) return Status::Invalid(what + ": empty list");
  return out;
}

}  // namespace meshplan::capacity
