#include "core/sequence/document_sampler.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>

namespace meshplan {
namespace {

DocumentSampler Parse(const std::string& spec) {
  auto sampler = ParseDocumentSampler(spec);
  EXPECT_TRUE(sampler.ok()) << spec << ": " << sampler.status().message();
  return sampler.ok() ? *sampler : DocumentSampler{};
}

std::vector<int64_t> Sample(const std::string& spec, int64_t seq) {
  auto lengths = SampleDocumentLengths(Parse(spec), seq);
  EXPECT_TRUE(lengths.ok()) << spec << ": " << lengths.status().message();
  return lengths.ok() ? *lengths : std::vector<int64_t>{};
}

int64_t Sum(const std::vector<int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), int64_t{0});
}

TEST(DocumentSampler, LengthsCoverTheSequenceExactlyAndArePositive) {
  for (const std::string spec :
       {"lognormal:median=100:sigma=1.5", "uniform:min=1:max=50", "lognormal:median=1"}) {
    for (int64_t seq : {1, 2, 97, 4096}) {
      const std::vector<int64_t> lengths = Sample(spec, seq);
      EXPECT_EQ(Sum(lengths), seq) << spec;
      EXPECT_GE(*std::min_element(lengths.begin(), lengths.end()), 1) << spec;
    }
  }
}

TEST(DocumentSampler, AlignRoundsEveryDrawUpToTheMultiple) {
  // align=48: each length the draw without align rounded up to a multiple of 48, the last cut to
  // what is left (a multiple too, as 4800 is); the same seed, so the same draws underneath.
  const std::vector<int64_t> plain = Sample("lognormal:median=100:sigma=1.5:seed=3", 4800);
  const std::vector<int64_t> aligned =
      Sample("lognormal:median=100:sigma=1.5:seed=3:align=48", 4800);
  EXPECT_EQ(Sum(aligned), 4800);
  int64_t left = 4800;
  for (size_t i = 0; i < aligned.size(); ++i) {
    EXPECT_EQ(aligned[i] % 48, 0) << i;
    const int64_t want = std::min(left, (plain[i] + 47) / 48 * 48);
    EXPECT_EQ(aligned[i], want) << i;
    left -= aligned[i];
  }
  // A sequence that is no multiple is refused with the nearest ones; align=0 is refused.
  auto bad = SampleDocumentLengths(Parse("uniform:min=1:max=50:align=48"), 4801);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("4800 and 4848"), std::string::npos)
      << bad.status().message();
  auto zero = ParseDocumentSampler("uniform:min=1:max=50:align=0");
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("align"), std::string::npos);
}

TEST(DocumentSampler, ZeroSigmaDrawsTheMedianEveryTime) {
  // exp(0 * z) = 1: every draw is the median, 100 tokens; 1000 tokens are 10 such documents and
  // 1050 tokens add a last document cut to 50.
  EXPECT_EQ(Sample("lognormal:median=100:sigma=0", 1000), std::vector<int64_t>(10, 100));
  std::vector<int64_t> cut(10, 100);
  cut.push_back(50);
  EXPECT_EQ(Sample("lognormal:median=100:sigma=0", 1050), cut);
}

TEST(DocumentSampler, LogNormalSampleMedianIsTheRequestedMedian) {
  // log(length) ~ N(log 1000, 0.5^2). The sample median of n normal draws has standard deviation
  // sigma * sqrt(pi / (2 n)); 2^24 tokens hold n ~ 16000 documents of mean 1000 * exp(0.125),
  // so sd ~ 0.5 * sqrt(1.571 / 14800) = 0.0052. Five of them, 0.026, bound |log(median / 1000)|
  // with a margin for the rounding to whole tokens (at most 0.0005 at 1000 tokens).
  std::vector<int64_t> lengths = Sample("lognormal:median=1000:sigma=0.5:seed=7", int64_t{1} << 24);
  lengths.pop_back();  // the last one is cut to fit
  ASSERT_GT(lengths.size(), 10000u);
  std::nth_element(lengths.begin(), lengths.begin() + lengths.size() / 2, lengths.end());
  const double median = static_cast<double>(lengths[lengths.size() / 2]);
  EXPECT_LT(std::abs(std::log(median / 1000.0)), 0.026) << median;
}

TEST(DocumentSampler, UniformStaysInItsRangeAndReachesBothEnds) {
  std::vector<int64_t> lengths = Sample("uniform:min=3:max=6:seed=2", 10000);
  lengths.pop_back();
  const std::set<int64_t> seen(lengths.begin(), lengths.end());
  // About 2200 draws of 4 values: each is missed with probability (3/4)^2200, nil.
  EXPECT_EQ(seen, (std::set<int64_t>{3, 4, 5, 6}));
}

TEST(DocumentSampler, TheSeedDecidesTheDraw) {
  const std::string spec = "lognormal:median=64:sigma=1";
  EXPECT_EQ(Sample(spec + ":seed=5", 5000), Sample(spec + ":seed=5", 5000));
  EXPECT_NE(Sample(spec + ":seed=5", 5000), Sample(spec + ":seed=6", 5000));
  // The default seed is 1.
  EXPECT_EQ(Sample(spec, 5000), Sample(spec + ":seed=1", 5000));
}

TEST(DocumentSampler, TooManyDocumentsAreRefused) {
  // Every draw is 1 token: 2^20 + 1 tokens need one document more than the limit.
  auto lengths =
      SampleDocumentLengths(Parse("lognormal:median=1:sigma=0"), kMaxSampledDocuments + 1);
  ASSERT_FALSE(lengths.ok());
  EXPECT_NE(lengths.status().message().find("more than 1048576 documents"), std::string::npos)
      << lengths.status().message();
  EXPECT_TRUE(
      SampleDocumentLengths(Parse("lognormal:median=1:sigma=0"), kMaxSampledDocuments).ok());
}

TEST(DocumentSampler, ParseErrorsNameTheKey) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"lognormal", "median: missing"},
      {"lognormal:median=8K:sigma=9", "sigma: must be between 0 and 8"},
      {"lognormal:median=8K:sigma=x", "sigma: expected a number"},
      {"lognormal:median=0", "docs-sampled median"},
      {"uniform:min=5:max=4", "max: must be at least min"},
      {"uniform:min=5:max=9:seed=-1", "seed: expected an integer"},
      {"uniform:min=5:max=9:mean=4", "mean: unknown key for uniform"},
      {"uniform:min=5:min=6:max=9", "min: given twice"},
      {"lognormal:median", "expected KEY=VALUE"},
      {"zipf:s=2", "unknown distribution"},
      {"empirical", "file: missing"},
  };
  for (const auto& [spec, message] : cases) {
    auto sampler = ParseDocumentSampler(spec);
    ASSERT_FALSE(sampler.ok()) << spec;
    EXPECT_EQ(sampler.status().code(), ErrorCode::kInvalidInput) << spec;
    EXPECT_NE(sampler.status().message().find(message), std::string::npos)
        << spec << " -> " << sampler.status().message();
  }
}

class EmpiricalSamplerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A ':' in the path: file= takes the rest of the spec.
    path_ = (std::filesystem::temp_directory_path() /
             ("meshplan_lengths:" + std::to_string(::getpid()) + ".txt"))
                .string();
  }
  void TearDown() override { std::filesystem::remove(path_); }
  std::string path_;
};

TEST_F(EmpiricalSamplerTest, DrawsOnlyTheListedLengths) {
  std::ofstream(path_) << "# lengths seen in a dataset\n16, 48\n48 2K\n";
  std::vector<int64_t> lengths = Sample("empirical:seed=3:file=" + path_, 200000);
  lengths.pop_back();
  const std::set<int64_t> seen(lengths.begin(), lengths.end());
  EXPECT_EQ(seen, (std::set<int64_t>{16, 48, 2048}));
}

TEST_F(EmpiricalSamplerTest, MissingFileIsNamed) {
  auto sampler = ParseDocumentSampler("empirical:file=" + path_ + ".absent");
  ASSERT_FALSE(sampler.ok());
  EXPECT_NE(sampler.status().message().find(path_ + ".absent"), std::string::npos)
      << sampler.status().message();
}

}  // namespace
}  // namespace meshplan
