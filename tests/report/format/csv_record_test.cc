// CsvRecord (report/format/csv_record.h): the header and the row come from one list of named
// fields.
#include "report/format/csv_record.h"

#include <gtest/gtest.h>

#include <limits>

namespace meshplan::report {
namespace {

TEST(CsvRecord, HeaderAndRowLineUpAndQuoteWhatNeedsIt) {
  CsvRecord c;
  c.Add("name", "a, b");        // a comma: quoted
  c.AddNumber("time_s", 0.25);  // shortest text of the double
  c.AddInt("bytes", 10752000000);
  c.AddNumber("absent", std::numeric_limits<double>::quiet_NaN());  // empty field
  c.Add("last", "x");
  EXPECT_EQ(c.Header(), "name,time_s,bytes,absent,last\n");
  // Bytes as an integer, never 1.0752e+10.
  EXPECT_EQ(c.Row(), "\"a, b\",0.25,10752000000,,x\n");
}

TEST(CsvRecord, WorkloadColumns) {
  Workload w;  // the default: B=1 S=1M Hq=64 Hkv=8 d=128 bf16 causal fwd+bwd
  CsvRecord c;
  AddWorkloadColumns(w, c);
  EXPECT_EQ(c.Header(), "batch,seq_len,q_heads,kv_heads,head_dim,dtype,mask,pass\n");
  EXPECT_EQ(c.Row(), "1,1048576,64,8,128,bf16,causal,fwd+bwd\n");
}

}  // namespace
}  // namespace meshplan::report
