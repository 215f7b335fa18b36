// WorkloadFields: only the fields a layer sets reach the workload or the layer below.
#include "core/workload/workload_fields.h"

#include <gtest/gtest.h>

namespace meshplan {
namespace {

TEST(WorkloadFields, ApplyToReplacesOnlyTheSetFields) {
  EXPECT_EQ(WorkloadFields{}.ApplyTo(Workload::Default()).Describe(),
            Workload::Default().Describe());
  WorkloadFields fields;
  fields.batch = 2;
  fields.seq_len = 4096;
  fields.q_heads = 16;
  fields.kv_heads = 4;
  fields.head_dim = 64;
  fields.dtype = DType::kFp16;
  fields.partial_dtype = DType::kBf16;
  fields.mask = Mask::Full();
  fields.pass = Pass::kForward;
  const Workload w = fields.ApplyTo(Workload::Default());
  EXPECT_EQ(w.batch, 2);
  EXPECT_EQ(w.seq_len, 4096);
  EXPECT_EQ(w.q_heads, 16);
  EXPECT_EQ(w.kv_heads, 4);
  EXPECT_EQ(w.head_dim, 64);
  EXPECT_EQ(w.dtype, DType::kFp16);
  EXPECT_EQ(w.partial_dtype, DType::kBf16);
  EXPECT_EQ(w.mask.kind, MaskKind::kFull);
  EXPECT_EQ(w.pass, Pass::kForward);
}

TEST(WorkloadFields, OverlayKeepsWhatTheTopLayerLeavesUnset) {
  WorkloadFields bottom;
  bottom.q_heads = 32;
  bottom.dtype = DType::kFp16;
  WorkloadFields top;
  top.dtype = DType::kFp32;
  top.pass = Pass::kBackward;
  bottom.Overlay(top);
  EXPECT_EQ(bottom.q_heads, 32);
  EXPECT_EQ(bottom.dtype, DType::kFp32);
  EXPECT_EQ(bottom.pass, Pass::kBackward);
  EXPECT_FALSE(bottom.batch.has_value());
}

}  // namespace
}  // namespace meshplan
