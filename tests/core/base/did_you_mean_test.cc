// DidYouMean (core/base/did_you_mean.h): the nearest name within max(2, size / 4) edits, letters
// compared without case.
#include "core/base/did_you_mean.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace meshplan {
namespace {

TEST(DidYouMean, NearestWithinTheBoundCaseIgnored) {
  const std::vector<std::string> names = {"ring", "mesh", "ulysses"};
  EXPECT_EQ(DidYouMean("Ring", names), " (did you mean 'ring'?)");       // 0 edits, case apart
  EXPECT_EQ(DidYouMean("ulyses", names), " (did you mean 'ulysses'?)");  // 1 edit
  EXPECT_EQ(DidYouMean("mash", names), " (did you mean 'mesh'?)");       // 1 edit
  // "allgather" is 6+ edits from every name; the bound for 9 letters is max(2, 2) = 2.
  EXPECT_EQ(DidYouMean("allgather", names), "");
  EXPECT_EQ(DidYouMean("x", std::vector<std::string>{}), "");
}

}  // namespace
}  // namespace meshplan
