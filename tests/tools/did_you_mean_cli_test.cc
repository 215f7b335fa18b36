// Mistyped commands, flags and names get the nearest correct one (issue 48): one line, exit 2.
#include <gtest/gtest.h>

#include "tests/tools/cli_fixture.h"

namespace meshplan {
namespace {

class DidYouMeanCli : public testing::CliFixture {};

TEST_F(DidYouMeanCli, AMistypedCommandNamesTheNearestAndListsThem) {
  ExpectRefused("plann",
                "unknown command 'plann' (did you mean 'plan'?) (commands: plan, simulate, topo, "
                "execute, sweep, fit, calibrate, bench, step) (see meshplan --help)");
  ExpectRefusedWith("topo neww", {"unknown command 'neww' (did you mean 'new'?)",
                                  "(commands: list, show, validate, new, from-nccl-tests)"});
  // Nothing close: the list alone.
  ExpectRefused("zzzzzzzz",
                "unknown command 'zzzzzzzz' (commands: plan, simulate, topo, execute, sweep, fit, "
                "calibrate, bench, step) (see meshplan --help)");
}

TEST_F(DidYouMeanCli, AMistypedFlagNamesTheNearestFlagOfItsCommand) {
  ExpectRefusedWith("plan --seqq 1M", {"not expected", "--seqq", "(did you mean '--seq'?)"});
  ExpectRefusedWith("sweep --gpuss 8", {"(did you mean '--gpus'?)"});
  ExpectRefusedWith("plan --seq=1M --topp 3", {"(did you mean '--top'?)"});
  // A flag of another command is not suggested for this one: fit has no --top.
  const testing::CliResult r = Run("fit --topp 3");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.find("'--top'"), std::string::npos) << r.err;
}

TEST_F(DidYouMeanCli, NamesAreMatchedWithoutCase) {
  ExpectRefusedWith("plan --schemes Ring", {"unknown scheme 'Ring' (did you mean 'ring'?)"});
  ExpectRefusedWith("plan --model Llama-3.1-8B",
                    {"unknown model 'Llama-3.1-8B' (did you mean 'llama-3.1-8b'?)"});
  ExpectRefusedWith("plan -t dgx-h100-4nod",
                    {"unknown cluster 'dgx-h100-4nod' (did you mean 'dgx-h100-4node'?)"});
  ExpectRefusedWith("topo new --gpu H100-SXM5 --nodes 1",
                    {"unknown GPU 'H100-SXM5' (did you mean 'h100-sxm5'?)"});
}

}  // namespace
}  // namespace meshplan
