// CSV helpers: fields quoted only when they must be, numbers that read back as the same double.
#include "core/base/csv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "core/base/json_writer.h"

namespace meshplan {
namespace {

// The double a CSV reader gets back from the text.
double ReadBack(const std::string& text) { return std::strtod(text.c_str(), nullptr); }

TEST(CsvNumber, ValuesReadBackExactly) {
  // The value the issue saw cut to 1.53932e+13 by %g; values with 17 significant digits; the
  // smallest and largest normal doubles; one third (no short decimal form).
  for (double value :
       {15393162788864.0, 0.40339917795502793, 246290839502848.0, 1.0 / 3.0, 0.1, 2.5e-3, -7.25,
        std::numeric_limits<double>::min(), std::numeric_limits<double>::max()}) {
    const std::string text = CsvNumber(value);
    EXPECT_EQ(ReadBack(text), value) << text;
  }
}

TEST(CsvNumber, WholeNumbersAreWrittenInFullAndShortValuesStayShort) {
  // 1.53932e+13 would lose 2788864 bytes: the integer is written out.
  EXPECT_EQ(CsvNumber(15393162788864.0), "15393162788864");
  EXPECT_EQ(CsvNumber(264241152.0), "264241152");
  EXPECT_EQ(CsvNumber(0.5), "0.5");
  EXPECT_EQ(CsvNumber(1.0), "1");
  EXPECT_EQ(CsvNumber(0.0), "0");
}

TEST(CsvNumber, NonFiniteValuesAreEmptyFields) {
  EXPECT_EQ(CsvNumber(std::nan("")), "");
  EXPECT_EQ(CsvNumber(std::numeric_limits<double>::infinity()), "");
}

TEST(CsvField, QuotesOnlyWhenNeeded) {
  EXPECT_EQ(CsvField("zigzag cache"), "zigzag cache");
  EXPECT_EQ(CsvField("a,b"), "\"a,b\"");
  EXPECT_EQ(CsvField("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(CsvField("two\nlines"), "\"two\nlines\"");
}

TEST(Csv, BytesAreIntegersNeverExponents) {
  // 1.0752e10 is what the shortest form of the double gives (10 characters against 11 digits):
  // byte counts must read as integers.
  EXPECT_EQ(CsvNumber(1.0752e10), "1.0752e+10");
  EXPECT_EQ(CsvBytes(1.0752e10), "10752000000");
  EXPECT_EQ(CsvBytes(2.6), "3");  // rounded
  EXPECT_EQ(CsvBytes(std::nan("")), "");
}

TEST(JsonWriter, BytesAreIntegersNeverExponents) {
  JsonWriter j;
  j.BeginObject();
  j.Key("a");
  j.Bytes(1.0752e10);
  j.Key("b");
  j.Bytes(std::nan(""));
  j.Key("c");
  j.Number(1.0752e10);  // other numbers keep the shortest form
  j.EndObject();
  EXPECT_EQ(j.Take(), "{\"a\":10752000000,\"b\":null,\"c\":1.0752e+10}");
}

}  // namespace
}  // namespace meshplan
