// The chart palette (report/svg/svg_canvas.h): one colour per scheme, so a best-scheme map never
// draws two schemes alike (issue 32: the first and the ninth scheme shared a blue).
#include "report/svg/svg_canvas.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "planner/schemes/registry.h"

namespace meshplan::plot {
namespace {

TEST(SvgCanvas, EverySchemeHasItsOwnColour) {
  const int schemes = static_cast<int>(planner::AllSchemes().size());
  std::set<std::string> colours;
  for (int i = 0; i < schemes; ++i) colours.insert(Colour(i));
  EXPECT_EQ(static_cast<int>(colours.size()), schemes);
  // The palette repeats only after its last colour.
  EXPECT_EQ(std::string(Colour(kPaletteSize)), std::string(Colour(0)));
}

}  // namespace
}  // namespace meshplan::plot
