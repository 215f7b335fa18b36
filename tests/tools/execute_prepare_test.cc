// Issue 17's cases for `meshplan execute`'s flags (tools/execute_prepare.cc): fault injection
// must name a rank and an op that exist.
#include <gtest/gtest.h>

#include <string>

#include "tests/tools/cli_fixture.h"

namespace meshplan {
namespace {

using ExecuteFlags17 = testing::CliFixture;

TEST_F(ExecuteFlags17, InjectSilentMinusOneIsRefused) {
  // Issue 17: -1, the old "not given" value, was accepted silently.
  const std::string plan = MakeFourRankPlan();
  ExpectRefused("execute " + plan + " --inject-silent -1",
                "--inject-silent: '-1' is not a rank in [0, 4)");
  ExpectRefused("execute " + plan + " --inject-silent 4",
                "--inject-silent: '4' is not a rank in [0, 4)");
}

TEST_F(ExecuteFlags17, InjectFailNamingARankThatDoesNotExistIsRefused) {
  const std::string plan = MakeFourRankPlan();
  ExpectRefused("execute " + plan + " --inject-fail 9:0",
                "--inject-fail: '9:0' is not RANK:OP with 0 <= RANK < 4 and OP >= 0");
  ExpectRefused(
      "execute " + plan + " --inject-fail 99999999999999999999:0",
      "--inject-fail: '99999999999999999999:0' is not RANK:OP with 0 <= RANK < 4 and OP >= 0");
  ExpectRefused("execute " + plan + " --inject-fail=-1:0",
                "--inject-fail: '-1:0' is not RANK:OP with 0 <= RANK < 4 and OP >= 0");
}

TEST_F(ExecuteFlags17, InjectFailNamingAnOpThatDoesNotExistIsRefused) {
  const std::string plan = MakeFourRankPlan();
  ExpectRefusedWith("execute " + plan + " --inject-fail 1:999999",
                    {"--inject-fail: '1:999999': rank 1 has ", " ops"});
}

}  // namespace
}  // namespace meshplan
