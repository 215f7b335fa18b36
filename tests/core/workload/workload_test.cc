#include "core/workload/workload.h"

#include <gtest/gtest.h>

namespace meshplan {
namespace {

TEST(WorkloadTest, BatchOf2To62IsRefusedNamingEveryFactor) {
  // Issue 17: --batch 2^62 ran without a word. 2^62 x 2^20 tokens x 64 x 128 = 2^95 elements.
  Workload w = Workload::Default();
  w.batch = int64_t{1} << 62;
  const Status st = w.Validate();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(),
            "batch (4611686018427387904) x seq (1048576) x heads (64) x head-dim (128) is more "
            "than the 2^56 "
            "elements a tensor may have");
}

TEST(WorkloadTest, TensorOfExactly2To56ElementsIsAcceptedOneMoreBatchIsNot) {
  // Default: seq 2^20, heads 64 = 2^6, head_dim 128 = 2^7, so batch 2^23 gives 2^(23+20+6+7) =
  // 2^56.
  Workload w = Workload::Default();
  w.batch = int64_t{1} << 23;
  EXPECT_TRUE(w.Validate().ok()) << w.Validate().message();
  w.batch += 1;
  EXPECT_FALSE(w.Validate().ok());
}

TEST(WorkloadTest, HeadDimOf2To40PassesTheElementBoundWhenSmallElsewhere) {
  // 1 x 1024 x 1 x 2^40 = 2^50 elements: representable, so Validate accepts it; whether a machine
  // can hold it is for the one who allocates (the CLI's last guard reports an allocation failure).
  Workload w = Workload::Default();
  w.seq_len = 1024;
  w.q_heads = 1;
  w.kv_heads = 1;
  w.head_dim = int64_t{1} << 40;
  EXPECT_TRUE(w.Validate().ok()) << w.Validate().message();
}

}  // namespace
}  // namespace meshplan
