// Calibrate's fit against a target with known, injected rates: it must recover them.
//
// The target below answers every measurement from the model itself (no noise), so the only
// error left is Calibrate's rounding of what it writes: a value rounded to k significant digits
// is within 0.5 x 10^(1-k) of itself, relative. The tolerances below are exactly those bounds
// (peak 4 digits: 5e-4; efficiency, backward ratio, bandwidths, latency 3 digits: 5e-3;
// concurrent kernels 2 digits: 5e-2), plus the efficiency's dependence on the rounded peak (5e-4).
#include "executor/calibration/calibration.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <vector>

#include "core/cost/kernel_time.h"
#include "core/sequence/layout.h"
#include "core/sequence/mask.h"

namespace meshplan::exec {
namespace {

struct Truth {
  double peak_flops = 40e9;              // one kernel alone, at efficiency 1
  std::map<int64_t, double> efficiency;  // at every block size Calibrate measures
  double backward_ratio = 1.3;
  double cut_row_extra_pairs = 48;  // a cut row's extra pairs at the dense rate
  double merge_bytes_per_s = 12e9;
  double concurrent = 2;  // kernels at full rate
  DeviceSharing sharing = DeviceSharing::kProcessor;
  double latency_s = 9e-6;
  double bytes_per_s = 3e9;
};

class KnownTarget : public CalibrationTarget {
 public:
  KnownTarget(const Truth& t, int64_t d, int64_t heads) : t_(t), d_(d), heads_(heads) {}

  // `ranks` copies at once on a device of `concurrent` slots: the last ends after the time alone
  // x ranks / min(concurrent, ranks) under processor sharing, x ceil(ranks / concurrent) served
  // in turn (the same for the integer concurrency these tests use).
  Result<double> KernelSeconds(BlockPiece piece, int64_t n, int64_t heads, bool backward,
                               int ranks) override {
    const double c = std::min(t_.concurrent, static_cast<double>(ranks));
    const double stretch =
        t_.sharing == DeviceSharing::kProcessor ? ranks / c : std::ceil(ranks / c);
    return stretch * Alone(piece, n, heads, backward);
  }
  double Alone(BlockPiece piece, int64_t n, int64_t heads, bool backward) {
    const double pairs = static_cast<double>(PieceVisiblePairs(piece, n));
    // The model's kernel: the visible pairs plus W per cut row at the dense rate. Cut rows by hand
    // (the rows that see some but not all keys): the diagonal's queries 0..n-1 see q + 1 of the n
    // keys, all but the last cut: n - 1; the partial's queries n/2..3n/2-1 see min(q + 1, n): the
    // rows n/2..n-2 cut: n/2 - 1; the full and chunked pieces none (every chunk pair whole or
    // hidden).
    const double cut_rows = piece == BlockPiece::kDiagonal  ? static_cast<double>(n - 1)
                            : piece == BlockPiece::kPartial ? static_cast<double>(n / 2 - 1)
                                                            : 0.0;
    const double flops = 4.0 * (pairs + cut_rows * t_.cut_row_extra_pairs) * heads * d_;
    const double rate = t_.peak_flops * t_.efficiency.at(n);
    return backward ? 2.5 * flops / (rate * t_.backward_ratio) : flops / rate;
  }
  Result<double> MergeSeconds(int64_t n) override {
    if (fail_merge) return Status::Io("injected failure");
    // 3 x the partial's bytes (O and LSE of n rows, fp32) at the merge bandwidth.
    return 3.0 * static_cast<double>(n) * heads_ * (d_ + 1) * 4.0 / t_.merge_bytes_per_s;
  }
  Result<std::vector<double>> ConcurrentEndsSeconds(int ranks, int64_t n, int repeats) override {
    const double alone = repeats * Alone(BlockPiece::kFull, n, heads_, false);
    std::vector<double> ends(static_cast<size_t>(ranks));
    const double c = t_.concurrent;
    for (int r = 0; r < ranks; ++r) {
      // Processor sharing of equal kernels: all end together after ranks / min(c, ranks) alone
      // times. Serial with an integer c: rank r waits for floor(r / c) kernels before it.
      ends[r] = t_.sharing == DeviceSharing::kProcessor
                    ? alone * ranks / std::min(c, static_cast<double>(ranks))
                    : alone * (std::floor(r / c) + 1);
    }
    return ends;
  }
  Result<double> MessageSeconds(int64_t bytes) override {
    return t_.latency_s + static_cast<double>(bytes) / t_.bytes_per_s;
  }
  bool fail_merge = false;

 private:
  Truth t_;
  int64_t d_, heads_;
};

// Efficiencies rising by 0.1 to 1 at the largest block: relative to the best they are exact in
// the file's 3 digits, so the dense model of every sample is exact and the fits downstream of the
// curve (the cut cost, the backward ratio) carry only their own rounding.
Truth MakeTruth(bool quick) {
  Truth t;
  const std::vector<int64_t> sizes = CalibrationBlockSizes(quick, 1);
  double e = 1.0 - 0.1 * static_cast<double>(sizes.size() - 1);
  for (int64_t n : sizes) {
    t.efficiency[n] = e;
    e += 0.1;
  }
  return t;
}

CalibrationSpec Spec(int ranks, bool quick) {
  CalibrationSpec s;
  s.ranks = ranks;
  s.head_dim = 64;
  s.heads = 2;
  s.quick = quick;
  s.memory_bytes = 16e9;
  return s;
}

void ExpectRelative(double got, double want, double tolerance, const char* what) {
  EXPECT_LE(std::abs(got / want - 1.0), tolerance) << what << ": got " << got << ", want " << want;
}

TEST(PieceVisiblePairs, CountsByHand) {
  // n = 4. full: 16. diagonal (queries = keys = 0..3, causal): 1 + 2 + 3 + 4 = 10.
  // partial (queries 2..5, keys 0..3): 3 + 4 + 4 + 4 = 15 = 7 * 16 / 8 + 4 / 4.
  EXPECT_EQ(PieceVisiblePairs(BlockPiece::kFull, 4), 16);
  EXPECT_EQ(PieceVisiblePairs(BlockPiece::kDiagonal, 4), 10);
  EXPECT_EQ(PieceVisiblePairs(BlockPiece::kPartial, 4), 15);
  EXPECT_EQ(PieceVisiblePairs(BlockPiece::kPartial, 512), 7 * 512 * 512 / 8 + 512 / 4);
  // chunked, n = 4: queries 2, 3, 6, 7 and keys 0, 1, 4, 5: 2 + 2 + 4 + 4 = 12 = 3n^2/4, the three
  // visible chunk pairs of 2 x 2.
  EXPECT_EQ(PieceVisiblePairs(BlockPiece::kChunked, 4), 12);
  EXPECT_EQ(PieceVisiblePairs(BlockPiece::kChunked, 512), 3 * 512 * 512 / 4);
}

TEST(PiecePositions, AsTheHeaderSays) {
  // n = 4, chunks of n/2 = 2. chunked: queries [2, 4) u [6, 8), keys [0, 2) u [4, 6): query chunk
  // [2, 4) sees key chunk [0, 2) whole and [4, 6) not at all; [6, 8) sees both whole. No chunk pair
  // is cut, so its cut fraction is 0. partial: queries [2, 6), keys [0, 4).
  std::vector<int64_t> q, k;
  PiecePositions(BlockPiece::kChunked, 4, &q, &k);
  EXPECT_EQ(q, (std::vector<int64_t>{2, 3, 6, 7}));
  EXPECT_EQ(k, (std::vector<int64_t>{0, 1, 4, 5}));
  PiecePositions(BlockPiece::kPartial, 4, &q, &k);
  EXPECT_EQ(q, (std::vector<int64_t>{2, 3, 4, 5}));
  EXPECT_EQ(k, (std::vector<int64_t>{0, 1, 2, 3}));
  // Cut rows, n = 4: diagonal rows 0, 1, 2 see 1, 2, 3 of the 4 keys (cut), row 3 all: 3.
  // partial: row 2 sees 3 of keys 0..3 (cut), rows 3, 4, 5 all: 1. chunked, full: 0.
  EXPECT_EQ(PieceCutRows(BlockPiece::kFull, 4), 0);
  EXPECT_EQ(PieceCutRows(BlockPiece::kChunked, 4), 0);
  EXPECT_EQ(PieceCutRows(BlockPiece::kDiagonal, 4), 3);
  EXPECT_EQ(PieceCutRows(BlockPiece::kPartial, 4), 1);
  EXPECT_DOUBLE_EQ(PieceCutRowsPerPair(BlockPiece::kDiagonal, 4), 3.0 / 10.0);
  EXPECT_DOUBLE_EQ(PieceCutRowsPerPair(BlockPiece::kPartial, 4), 1.0 / 15.0);
  // And as the schedule counts them (BlockWork over the piece's contiguous ranges), at n = 512.
  const PairCounter causal(Mask::Causal(), 2048);
  BlockWork diagonal, partial, chunked;
  AddRectangleWork(causal, {0, 512}, {0, 512}, &diagonal);
  AddRectangleWork(causal, {256, 768}, {0, 512}, &partial);
  for (TokenRange qc : {TokenRange{256, 512}, TokenRange{768, 1024}}) {
    for (TokenRange kc : {TokenRange{0, 256}, TokenRange{512, 768}})
      AddRectangleWork(causal, qc, kc, &chunked);
  }
  EXPECT_EQ(diagonal.cut_rows, PieceCutRows(BlockPiece::kDiagonal, 512));
  EXPECT_EQ(partial.cut_rows, PieceCutRows(BlockPiece::kPartial, 512));
  EXPECT_EQ(chunked.cut_rows, PieceCutRows(BlockPiece::kChunked, 512));
  EXPECT_EQ(chunked.pairs, PieceVisiblePairs(BlockPiece::kChunked, 512));
}

TEST(Calibrate, RecoversInjectedRatesUnderProcessorSharing) {
  for (bool quick : {true, false}) {
    const Truth truth = MakeTruth(quick);
    KnownTarget target(truth, 64, 2);
    auto r = Calibrate(target, Spec(4, quick));
    ASSERT_TRUE(r.ok()) << r.status().message();
    const GpuSpec& g = r->topology.gpu;
    // Calibrate's peak is the best forward sample: peak x the best efficiency; it scales the
    // curve to match, so peak x efficiency (the rate) is what must come back.
    const double best =
        std::max_element(truth.efficiency.begin(), truth.efficiency.end(), [](auto& a, auto& b) {
          return a.second < b.second;
        })->second;
    ExpectRelative(g.PeakFlopsPerSecond(DType::kFp32), truth.peak_flops * best, 5e-4, "peak");
    ASSERT_EQ(g.attention_efficiency.size(), truth.efficiency.size());
    for (const EfficiencyPoint& p : g.attention_efficiency) {
      ExpectRelative(g.PeakFlopsPerSecond(DType::kFp32) * p.efficiency,
                     truth.peak_flops * truth.efficiency.at(p.block_tokens), 5e-3 + 5e-4,
                     "rate at a block size");
    }
    // The ratios are fitted against the rounded curve (3 digits) and rounded themselves: 5e-3 each.
    // The dense model is exact (MakeTruth), so the least-squares cut cost is exact before its own
    // 3-digit rounding.
    ExpectRelative(g.cut_row_extra_pairs, truth.cut_row_extra_pairs, 5e-3 + 5e-4,
                   "cut row extra pairs");
    ExpectRelative(g.backward_rate_ratio, truth.backward_ratio, 3 * 5e-3 + 5e-4, "backward ratio");
    ExpectRelative(g.hbm_bytes_per_s, truth.merge_bytes_per_s, 5e-3, "merge bandwidth");
    EXPECT_EQ(g.ranks_per_device, 4);
    ExpectRelative(g.concurrent_kernels, truth.concurrent, 5e-2, "concurrent kernels");
    EXPECT_EQ(g.sharing, DeviceSharing::kProcessor);
    EXPECT_FALSE(g.copies_take_compute);  // the target says its copies leave the kernels alone
    ASSERT_EQ(r->topology.levels.size(), 1u);
    // The bandwidth comes from messages >= 1 MiB after the 4 KiB message's time, which carries
    // 4096 / 3e9 s = 1.4 us of transfer besides the 9 us latency: the latency is over-estimated by
    // 1.4 us, and bytes / (t - latency) under-estimates the time by that much on 1 MiB (350 us):
    // at most 1.4 / 350 = 0.4% high in bandwidth, plus 3-digit rounding.
    ExpectRelative(r->topology.levels[0].bandwidth_bytes_per_s, truth.bytes_per_s, 4e-3 + 5e-3,
                   "bandwidth");
    ExpectRelative(r->topology.levels[0].latency_s, truth.latency_s + 4096 / truth.bytes_per_s,
                   5e-3, "latency");
    EXPECT_LT(r->kernel_max_residual, 2e-2);
    EXPECT_TRUE(r->topology.Validate().ok());
  }
}

// KnownTarget whose reference block takes scripted times, one per call, and whose kernels run
// `slow_round_factor` times slower while the reference has been timed `slow_after_calls` times:
// a machine whose speed moves while calibrate runs.
class DriftingTarget : public KnownTarget {
 public:
  DriftingTarget(const Truth& t, int64_t d, int64_t heads, std::vector<double> reference_s)
      : KnownTarget(t, d, heads), reference_s_(std::move(reference_s)) {}
  Result<double> ReferenceBlockSeconds() override {
    if (calls_ >= reference_s_.size()) return Status::Io("more reference blocks than scripted");
    return reference_s_[calls_++];
  }
  Result<double> KernelSeconds(BlockPiece piece, int64_t n, int64_t heads, bool backward,
                               int ranks) override {
    MESHPLAN_ASSIGN_OR_RETURN(auto t, KnownTarget::KernelSeconds(piece, n, heads, backward, ranks));
    return calls_ == slow_after_calls ? t * slow_round_factor : t;
  }
  size_t calls_ = 0;
  size_t slow_after_calls = 0;
  double slow_round_factor = 1;

 private:
  std::vector<double> reference_s_;
};

TEST(Calibrate, TimesTheReferenceBlockAroundEveryPhaseAndRecordsTheDrift) {
  // Two ranks: the block before the sharing phase, after it, after each of the
  // kCalibrationRounds = 3 kernel rounds, after the merges and after the last phase: 7 times.
  // Scripted 1.0, 1.1, 1.2, 0.9, 1.0, 1.05, 1.3 ms: sorted 0.9, 1.0, 1.0, 1.05, 1.1, 1.2, 1.3,
  // median 1.05 ms. The second kernel round runs while the reference has been timed 3 times
  // (twice before the kernels, once after round 1), 10% slow: each sample's rounds are t, 1.1 t,
  // t, median t, so the round factors are 1, 1.1, 1 and the drift 1.1 / 1 - 1 = 0.1; the fit,
  // from the medians, is the truth's.
  const Truth truth = MakeTruth(true);
  DriftingTarget target(truth, 64, 2, {1.0e-3, 1.1e-3, 1.2e-3, 0.9e-3, 1.0e-3, 1.05e-3, 1.3e-3});
  target.slow_after_calls = 3;
  target.slow_round_factor = 1.1;
  auto r = Calibrate(target, Spec(2, true));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(target.calls_, 7u);
  EXPECT_EQ(r->reference_block_s.size(), 7u);
  ASSERT_EQ(r->round_time_factors.size(), 3u);
  EXPECT_DOUBLE_EQ(r->round_time_factors[0], 1.0);
  EXPECT_NEAR(r->round_time_factors[1], 1.1, 1e-12);
  EXPECT_DOUBLE_EQ(r->round_time_factors[2], 1.0);
  const CalibrationRecord& c = r->topology.calibration;
  EXPECT_DOUBLE_EQ(c.reference_block_s, 1.05e-3);
  EXPECT_EQ(c.reference_head_dim, 64);
  EXPECT_DOUBLE_EQ(c.speed_spread, 0.1);
  EXPECT_TRUE(c.has_reference());
  ExpectRelative(r->topology.gpu.PeakFlopsPerSecond(DType::kFp32), truth.peak_flops, 1e-3,
                 "peak, the slow round outvoted");
  // The reference's failure is the calibration's, named.
  DriftingTarget short_script(truth, 64, 2, {1e-3, 1e-3});
  auto failed = Calibrate(short_script, Spec(2, true));
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("calibrate: the reference block"), std::string::npos)
      << failed.status().message();
}

TEST(RoundTimeFactors, EachRoundsMedianRatioToItsSamplesMedians) {
  // Samples (rounds): (1, 2, 1) median 1 -> ratios 1, 2, 1; (2, 2, 3) median 2 -> 1, 1, 1.5;
  // (4, 5, 4) median 4 -> 1, 1.25, 1. Per round the median of the three ratios: round 0 median(1,
  // 1, 1) = 1, round 1 median(2, 1, 1.25) = 1.25, round 2 median(1, 1.5, 1) = 1.
  const std::vector<double> f = RoundTimeFactors({{1, 2, 1}, {2, 2, 3}, {4, 5, 4}});
  ASSERT_EQ(f.size(), 3u);
  EXPECT_DOUBLE_EQ(f[0], 1.0);
  EXPECT_DOUBLE_EQ(f[1], 1.25);
  EXPECT_DOUBLE_EQ(f[2], 1.0);
  EXPECT_TRUE(RoundTimeFactors({}).empty());
}

TEST(SummarizeSpeed, MedianReferenceAndRoundDriftRoundedAsTheFileKeepsThem) {
  // Reference 2.00004, 3 and 2.5 ms: median 2.5 ms. Rounds 0.98, 1.0 and 1.0312: drift
  // 1.0312 / 0.98 - 1 = 0.05224... -> 0.052.
  CalibrationRecord c;
  SummarizeSpeed({2.00004e-3, 3e-3, 2.5e-3}, {0.98, 1.0, 1.0312}, 128, &c);
  EXPECT_DOUBLE_EQ(c.reference_block_s, 2.5e-3);
  EXPECT_EQ(c.reference_head_dim, 128);
  EXPECT_DOUBLE_EQ(c.speed_spread, 0.052);
  // 4 significant digits: 1.23456 ms -> 1.235 ms. No rounds: the drift of the reference times,
  // 1.3 / 1.23456 - 1 = 0.05300... -> 0.053.
  CalibrationRecord one;
  SummarizeSpeed({1.23456e-3, 1.3e-3}, {}, 32, &one);
  EXPECT_DOUBLE_EQ(one.reference_block_s, 1.267e-3);  // the median, (1.23456 + 1.3) / 2
  EXPECT_DOUBLE_EQ(one.speed_spread, 0.053);
  CalibrationRecord none;
  SummarizeSpeed({}, {1.0}, 32, &none);
  EXPECT_FALSE(none.has_reference());
  EXPECT_EQ(none.speed_spread, -1);
}

TEST(Calibrate, TellsSerialFromProcessorSharing) {
  Truth truth = MakeTruth(true);
  truth.sharing = DeviceSharing::kSerial;
  KnownTarget target(truth, 64, 2);
  auto r = Calibrate(target, Spec(8, true));
  ASSERT_TRUE(r.ok()) << r.status().message();
  // 8 ranks on 2 slots served in turn end at 1, 1, 2, 2, 3, 3, 4, 4 alone-times: spread 3/4,
  // and 8 kernels of work over 4 alone-times = 2 kernels at full rate.
  EXPECT_EQ(r->topology.gpu.sharing, DeviceSharing::kSerial);
  ExpectRelative(r->topology.gpu.concurrent_kernels, 2.0, 5e-2, "concurrent kernels");
  EXPECT_NEAR(r->sharing.spread, 0.75, 1e-9);
  // Served in turn the ends are the model's own; no lag is charged beside them.
  EXPECT_EQ(r->topology.gpu.sharing_end_lag_s, 0.0);
}

// KnownTarget whose every block takes at least `floor_s` alone, as a GPU engine's blocks take at
// least the host's work of issuing them: small blocks time the same whatever their mask.
class IssueFloorTarget : public KnownTarget {
 public:
  IssueFloorTarget(const Truth& t, int64_t d, int64_t heads, double floor_s)
      : KnownTarget(t, d, heads), t_(t), floor_s_(floor_s) {}
  Result<double> KernelSeconds(BlockPiece piece, int64_t n, int64_t heads, bool backward,
                               int ranks) override {
    auto s = KnownTarget::KernelSeconds(piece, n, heads, backward, ranks);
    if (!s.ok()) return s;
    // The stretch of `ranks` at once applies to the floor as to the work (processor sharing,
    // the truth's 2 slots): ranks / min(2, ranks).
    const double stretch = ranks / std::min(t_.concurrent, static_cast<double>(ranks));
    return std::max(*s, stretch * floor_s_);
  }

 private:
  Truth t_;
  double floor_s_;
};

TEST(Calibrate, TheCutTermComesFromBlocksThatAreNotBoundByIssuingThem) {
  const Truth truth = MakeTruth(true);  // quick sizes 128, 512, 2K, 4K at efficiency .7 .8 .9 1
  const int64_t d = 64, heads = 2;
  // A floor of 3 full 512-token forward blocks alone: every 128 and 512 sample (a full 512
  // backward is 2.5 / 1.3 = 1.9 of its forward, the masked ones less) takes the floor, so the
  // 512 full forward reads 0.8 / 3 = 0.27 of the peak rate x efficiency 1 and 128 less; a 2K
  // block has 16 x the pairs of a 512 one at a higher rate, above the floor in every piece.
  KnownTarget plain(truth, d, heads);
  const double floor_s = 3.0 * plain.Alone(BlockPiece::kFull, 512, heads, false);
  ASSERT_GT(plain.Alone(BlockPiece::kPartial, 2048, heads, false), floor_s);
  ASSERT_GT(plain.Alone(BlockPiece::kDiagonal, 2048, heads, false), floor_s);
  IssueFloorTarget target(truth, d, heads, floor_s);
  auto r = Calibrate(target, Spec(4, true));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const GpuSpec& g = r->topology.gpu;
  EXPECT_LT(g.Efficiency(512), kCutFitMinEfficiency);
  EXPECT_GE(g.Efficiency(2048), kCutFitMinEfficiency);
  // Only the 2K diagonal and partial samples are fitted; their dense model is exact (MakeTruth),
  // so the truth's 48 comes back but for the 3-digit roundings. The floored 128 and 512 samples
  // take longer than their dense model at a cost unrelated to the mask; fitted with the rest they
  // give 68 (checked by setting kCutFitMinEfficiency to 0).
  ExpectRelative(g.cut_row_extra_pairs, truth.cut_row_extra_pairs, 5e-3 + 5e-4,
                 "cut row extra pairs");
}

// KnownTarget under processor sharing whose equal kernels, started together, end at the given
// multiples of the fair end F = repeats x alone x ranks / c when `ranks` of them run at once: a
// lag that is a fixed share of the race, in the first races and the kLongRaceFactor times longer
// ones alike. fair_end_s is the first races' F.
class UnevenEndsTarget : public KnownTarget {
 public:
  UnevenEndsTarget(const Truth& t, int ranks, std::vector<double> ends_over_fair)
      : KnownTarget(t, 64, 2), ranks_(ranks), ends_over_fair_(std::move(ends_over_fair)) {}
  Result<std::vector<double>> ConcurrentEndsSeconds(int ranks, int64_t n, int repeats) override {
    MESHPLAN_ASSIGN_OR_RETURN(std::vector<double> ends,
                              KnownTarget::ConcurrentEndsSeconds(ranks, n, repeats));
    if (ranks != ranks_) return ends;
    const double fair = ends[0];
    if (fair_end_s == 0) fair_end_s = fair;
    for (size_t i = 0; i < ends.size(); ++i) ends[i] = ends_over_fair_[i] * fair;
    return ends;
  }
  double fair_end_s = 0;

 private:
  int ranks_;
  std::vector<double> ends_over_fair_;
};

TEST(Calibrate, TheLastRanksLagIsATimeBesideTheFairShare) {
  UnevenEndsTarget target(MakeTruth(true), 4, {0.96, 0.98, 1.00, 1.06});
  auto r = Calibrate(target, Spec(4, true));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const GpuSpec& g = r->topology.gpu;
  // The median end is 0.99 F: the work of 4 kernels over it is the injected parallelism / 0.99
  // (within the 2-digit rounding and 5%); the last end is 1.06 - 0.99 = 0.07 F after it (3
  // significant digits), (1.06 - 0.99) / 1.06 = 6.6% of the last end: processor sharing.
  EXPECT_EQ(g.sharing, DeviceSharing::kProcessor);
  ExpectRelative(g.concurrent_kernels, MakeTruth(true).concurrent / 0.99, 5e-2,
                 "concurrent kernels");
  ASSERT_GT(target.fair_end_s, 0.0);
  EXPECT_NEAR(r->sharing.end_lag_s, 0.07 * target.fair_end_s, 1e-12);
  EXPECT_NEAR(r->sharing.spread, 0.10 / 1.06, 1e-12);
  // The lag is 0.07 F in races of F and of kLongRaceFactor F alike, each after its median end
  // 0.99 F: no time, a fraction 0.07 / 0.99 of the run's fair end (3 significant digits), so a
  // run as long as the first race is charged 0.07 F.
  const double f = target.fair_end_s;
  EXPECT_NEAR(r->sharing.fair_end_s, 0.99 * f, 1e-12);
  EXPECT_NEAR(r->sharing.long_fair_end_s, 0.99 * kLongRaceFactor * f, 1e-12);
  EXPECT_NEAR(r->sharing.long_end_lag_s, 0.07 * kLongRaceFactor * f, 1e-12);
  EXPECT_NEAR(g.sharing_end_lag_s, 0.0, 1e-12);
  ExpectRelative(g.sharing_end_lag_fraction, 0.07 / 0.99, 5e-3, "end lag fraction");
  ExpectRelative(SharedDeviceEndLagSeconds(g, 0.99 * f), 0.07 * f, 5e-3,
                 "end lag of a run as long as the first race");
}

// Three time-sliced ranks on two cores: one has a core to itself and ends first, at 2/3 of the
// fair end F = 1.5 alone-times, and the other two then get a core each and end at F (ends 1, 1.5,
// 1.5 alone-times). The spread (1.5 - 1) / 1.5 = 33% once read as serial sharing; the median end
// is F, so it is processor sharing of 3 kernels over F = 2 kernels at full rate, with no lag.
TEST(Calibrate, AThreadAloneOnACoreForAWhileIsStillProcessorSharing) {
  UnevenEndsTarget target(MakeTruth(true), 3, {2.0 / 3.0, 1.0, 1.0});
  auto r = Calibrate(target, Spec(3, true));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const GpuSpec& g = r->topology.gpu;
  EXPECT_EQ(g.sharing, DeviceSharing::kProcessor);
  ExpectRelative(g.concurrent_kernels, 2.0, 5e-2, "concurrent kernels");
  EXPECT_NEAR(g.sharing_end_lag_s, 0.0, 1e-12);
  EXPECT_NEAR(g.sharing_end_lag_fraction, 0.0, 1e-12);
  EXPECT_NEAR(r->sharing.spread, 1.0 / 3.0, 1e-12);
}

// The same uneven ends on a target that knows its processors: 3 threads on 2 cores ending at
// 1.25, 1.43 and 1.65 alone-times (a trial measured on this machine's 2 cores). The median end,
// 1.43, would read as 3 / 1.43 = 2.1 kernels at full rate, more than 2 cores run; the fair end is
// the cores' full share instead, 3 / 2 = 1.5 alone-times: 2 kernels at full rate, and the last
// end 1.65 - 1.5 = 0.15 alone-times after it (not 1.65 - 1.43 = 0.22).
class ProcessorsTarget : public UnevenEndsTarget {
 public:
  ProcessorsTarget(const Truth& t, int ranks, std::vector<double> ends_over_fair, int processors)
      : UnevenEndsTarget(t, ranks, std::move(ends_over_fair)), processors_(processors) {}
  int Processors() const override { return processors_; }

 private:
  int processors_;
};

TEST(Calibrate, TheFairEndIsNeverBeforeTheProcessorsFullShare) {
  // MakeTruth's concurrency is 2, so UnevenEndsTarget's fair end F is 1.5 alone-times for 3 ranks
  // and the ends 1.25, 1.43, 1.65 alone-times are 1.25 / 1.5, 1.43 / 1.5, 1.65 / 1.5 of F.
  const std::vector<double> ends = {1.25 / 1.5, 1.43 / 1.5, 1.65 / 1.5};
  ProcessorsTarget two_cores(MakeTruth(true), 3, ends, 2);
  auto r = Calibrate(two_cores, Spec(3, true));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->topology.gpu.sharing, DeviceSharing::kProcessor);
  EXPECT_NEAR(r->topology.gpu.concurrent_kernels, 2.0, 1e-12);
  // The lag: (1.65 - 1.5) / 1.5 F = 0.1 F in every race, a fraction 0.1 of the run (3 significant
  // digits) and no time.
  EXPECT_NEAR(r->sharing.end_lag_s, 0.1 * two_cores.fair_end_s, 1e-12);
  EXPECT_NEAR(r->topology.gpu.sharing_end_lag_s, 0.0, 1e-12);
  ExpectRelative(r->topology.gpu.sharing_end_lag_fraction, 0.1, 5e-3, "end lag fraction");

  // Without a processor count the median end stands: 3 / 1.43 = 2.098 -> 2.1 kernels (2 digits),
  // and the lag is (1.65 - 1.43) / 1.5 F.
  UnevenEndsTarget unknown(MakeTruth(true), 3, ends);
  auto u = Calibrate(unknown, Spec(3, true));
  ASSERT_TRUE(u.ok()) << u.status().message();
  EXPECT_NEAR(u->topology.gpu.concurrent_kernels, 2.1, 1e-12);
  EXPECT_NEAR(u->sharing.end_lag_s, 0.22 / 1.5 * unknown.fair_end_s, 1e-12);

  // Processors to spare (4 cores for 3 ranks) bound nothing: the median end is later than the
  // full share 3 / 4 alone-times, so the result is the unknown count's.
  ProcessorsTarget four_cores(MakeTruth(true), 3, ends, 4);
  auto f = Calibrate(four_cores, Spec(3, true));
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_NEAR(f->topology.gpu.concurrent_kernels, 2.1, 1e-12);
  EXPECT_NEAR(f->sharing.end_lag_s, u->sharing.end_lag_s, 1e-12);
}

// FairEndSeconds by hand, in alone-times of one share (3 shares: work 3).
TEST(FairEndSeconds, TheMedianEndBoundedByTheProcessorsFullShare) {
  // One thread shares a core throughout: ends 4/3, 4/3, 5/3; the median 4/3 comes before the
  // 2 cores' full share 3 / 2, which is the fair end.
  EXPECT_NEAR(FairEndSeconds({4.0 / 3, 4.0 / 3, 5.0 / 3}, 3.0, 2), 1.5, 1e-12);
  // One thread alone on a core: ends 1, 1.5, 1.5; the median is the full share already.
  EXPECT_NEAR(FairEndSeconds({1.0, 1.5, 1.5}, 3.0, 2), 1.5, 1e-12);
  // Another tenant slowed every thread: ends 2, 2, 2.1; the median 2 is after the full share.
  EXPECT_NEAR(FairEndSeconds({2.0, 2.0, 2.1}, 3.0, 2), 2.0, 1e-12);
  // Processors unknown, or no work given: the median end.
  EXPECT_NEAR(FairEndSeconds({4.0 / 3, 4.0 / 3, 5.0 / 3}, 3.0, 0), 4.0 / 3, 1e-12);
  EXPECT_NEAR(FairEndSeconds({4.0 / 3, 4.0 / 3, 5.0 / 3}, 0.0, 2), 4.0 / 3, 1e-12);
  // An even count: the median is the mean of the middle two (ends 1, 2, 3, 4: 2.5), later than
  // 4 shares over 2 processors.
  EXPECT_NEAR(FairEndSeconds({1.0, 2.0, 3.0, 4.0}, 4.0, 2), 2.5, 1e-12);
}

// SpreadWorkSeconds by hand, in milliseconds as seconds.
TEST(SpreadWorkSeconds, TheThreadsCpuTimeOverTheCoresTheyCanUse) {
  // Three 20 ms threads on 2 cores that ended at 20, 40 and 40 (the scheduler left the first
  // one's core idle): 60 of CPU time over 2 cores is 30, not the median end 40.
  EXPECT_NEAR(SpreadWorkSeconds({20, 40, 40}, {20, 20, 20}, 2), 30.0, 1e-12);
  // One thread sharing a core throughout (ends 26.7, 26.7, 33.3 for 20 each): 30 again.
  EXPECT_NEAR(SpreadWorkSeconds({26.7, 26.7, 33.3}, {20, 20, 20}, 2), 30.0, 1e-12);
  // Fewer ranks than cores: each has a core, so the time is the mean CPU time, (20 + 22) / 2.
  EXPECT_NEAR(SpreadWorkSeconds({20, 22}, {20, 22}, 4), 21.0, 1e-12);
  // Processors unknown, or no CPU time measured: the median end.
  EXPECT_NEAR(SpreadWorkSeconds({20, 40, 40}, {20, 20, 20}, 0), 40.0, 1e-12);
  EXPECT_NEAR(SpreadWorkSeconds({20, 40, 40}, {0, 0, 0}, 2), 40.0, 1e-12);
}

// 3 ranks on 2 cores whose race takes one of two shapes, trial by trial: ends 1, 1.5, 1.5
// alone-times (one thread alone on a core: no lag) in the first, third and fifth trials; 4/3, 4/3,
// 5/3 (one thread sharing a core throughout: the last 1/6 alone-time past the fair 1.5) in the
// second and fourth, in the first races and the kLongRaceFactor times longer ones alike. The median
// lag of the 5 trials would be 0; the expected lag of a run is the mean, 2/5 x 1/6 alone-times =
// 1/15. alone_s is the first races' alone time.
class TwoShapesTarget : public KnownTarget {
 public:
  explicit TwoShapesTarget(const Truth& t) : KnownTarget(t, 64, 2) {}
  int Processors() const override { return 2; }
  Result<std::vector<double>> ConcurrentEndsSeconds(int ranks, int64_t n, int repeats) override {
    MESHPLAN_ASSIGN_OR_RETURN(std::vector<double> ends,
                              KnownTarget::ConcurrentEndsSeconds(ranks, n, repeats));
    if (ranks != 3) return ends;
    const double alone = ends[0] / 1.5;  // KnownTarget ends all at the fair 1.5 alone-times
    if (alone_s == 0) alone_s = alone;
    const bool lagging = trials_[repeats]++ % 2 == 1;
    ends = lagging ? std::vector<double>{4.0 / 3, 4.0 / 3, 5.0 / 3}
                   : std::vector<double>{1.0, 1.5, 1.5};
    for (double& e : ends) e *= alone;
    return ends;
  }
  double alone_s = 0;

 private:
  std::map<int, int> trials_;  // by race length (blocks per rank)
};

TEST(Calibrate, TheLagIsTheMeanOverTheTrials) {
  TwoShapesTarget target(MakeTruth(true));
  auto r = Calibrate(target, Spec(3, true));
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(kSharingTrials, 5);
  EXPECT_EQ(r->topology.gpu.sharing, DeviceSharing::kProcessor);
  EXPECT_NEAR(r->topology.gpu.concurrent_kernels, 2.0, 1e-12);
  EXPECT_NEAR(r->sharing.end_lag_s, target.alone_s / 15.0, 1e-12);
  // The same mean in the longer races, kLongRaceFactor times the first's: a share of the run,
  // (1/15) / 1.5 = 2/45 of it (3 significant digits), no time; a run as long as the first race
  // (its fair end, 1.5 alone-times) is charged 1/15 alone-time.
  EXPECT_NEAR(r->sharing.long_end_lag_s, kLongRaceFactor * target.alone_s / 15.0, 1e-12);
  EXPECT_NEAR(r->topology.gpu.sharing_end_lag_s, 0.0, 1e-12);
  ExpectRelative(r->topology.gpu.sharing_end_lag_fraction, 2.0 / 45.0, 5e-3, "end lag fraction");
  ExpectRelative(SharedDeviceEndLagSeconds(r->topology.gpu, 1.5 * target.alone_s),
                 target.alone_s / 15.0, 5e-3, "end lag of a run as long as the first race");
}

// A lag that is a time plus a share of the race (6 ms + 0.1 of its fair end, as 3 threads on 2
// cores measured in docs/fidelity.md): both come back from the two race lengths.
class TimeAndShareLagTarget : public KnownTarget {
 public:
  explicit TimeAndShareLagTarget(const Truth& t) : KnownTarget(t, 64, 2) {}
  int Processors() const override { return 2; }
  Result<std::vector<double>> ConcurrentEndsSeconds(int ranks, int64_t n, int repeats) override {
    MESHPLAN_ASSIGN_OR_RETURN(std::vector<double> ends,
                              KnownTarget::ConcurrentEndsSeconds(ranks, n, repeats));
    if (ranks != 3) return ends;
    // KnownTarget's 3 ends are all at the fair end F (2 kernels at full rate): the last one late.
    ends.back() += 6e-3 + 0.1 * ends.back();
    return ends;
  }
};

TEST(Calibrate, TheLagIsATimeAndAShareOfTheRun) {
  TimeAndShareLagTarget target(MakeTruth(true));
  auto r = Calibrate(target, Spec(3, true));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const GpuSpec& g = r->topology.gpu;
  EXPECT_EQ(g.sharing, DeviceSharing::kProcessor);
  ASSERT_GT(r->sharing.long_fair_end_s, r->sharing.fair_end_s);
  ExpectRelative(g.sharing_end_lag_s, 6e-3, 5e-3, "end lag time");
  ExpectRelative(g.sharing_end_lag_fraction, 0.1, 5e-3, "end lag fraction");

  // FitEndLag's corners, by hand: the line through (0.2, 0.026) and (0.6, 0.066) is 6 ms + 0.1 F;
  // a longer race that lagged less gives the mean lag as a time; a line below the origin, the
  // fraction through it, (0.02 x 0.2 + 0.08 x 0.6) / (0.04 + 0.36) = 0.13.
  EXPECT_NEAR(FitEndLag(0.2, 0.026, 0.6, 0.066).time_s, 6e-3, 1e-12);
  EXPECT_NEAR(FitEndLag(0.2, 0.026, 0.6, 0.066).fraction, 0.1, 1e-12);
  EXPECT_NEAR(FitEndLag(0.2, 0.03, 0.6, 0.02).time_s, 0.025, 1e-12);
  EXPECT_EQ(FitEndLag(0.2, 0.03, 0.6, 0.02).fraction, 0.0);
  EXPECT_EQ(FitEndLag(0.2, 0.02, 0.6, 0.08).time_s, 0.0);
  EXPECT_NEAR(FitEndLag(0.2, 0.02, 0.6, 0.08).fraction, 0.13, 1e-12);
  EXPECT_NEAR(FitEndLag(0.2, 0.02, 0.2, 0.04).time_s, 0.03, 1e-12);  // equal races: the mean
}

// KnownTarget whose kernels also do k FLOPs-worth of other work per pair and head: a kernel at
// head dim d takes (4 d + k) / (4 d) of KnownTarget's matmul time, at any other head dim d2
// (4 d2 + k) / (4 d) of it.
class HeadDimTarget : public KnownTarget {
 public:
  HeadDimTarget(const Truth& t, int64_t d, int64_t heads, double k)
      : KnownTarget(t, d, heads), d_(static_cast<double>(d)), k_(k) {}
  Result<double> KernelSeconds(BlockPiece piece, int64_t n, int64_t heads, bool backward,
                               int ranks) override {
    MESHPLAN_ASSIGN_OR_RETURN(auto t, KnownTarget::KernelSeconds(piece, n, heads, backward, ranks));
    return t * (4 * d_ + k_) / (4 * d_);
  }
  bool MeasuresOtherHeadDims() const override { return true; }
  Result<double> KernelSecondsAtHeadDim(int64_t head_dim, int64_t n, int64_t heads) override {
    MESHPLAN_ASSIGN_OR_RETURN(auto t,
                              KnownTarget::KernelSeconds(BlockPiece::kFull, n, heads, false, 1));
    return t * (4 * static_cast<double>(head_dim) + k_) / (4 * d_);
  }

 private:
  double d_, k_;
};

TEST(Calibrate, MeasuresASecondHeadDimAndFitsTheTerm) {
  // Head dim 64 with k = 128: SecondHeadDim(64) = 32, t(64) / t(32) = (256 + 128) / (128 + 128)
  // = 1.5, and 4 (64 - 1.5 x 32) / 0.5 = 128 comes back.
  EXPECT_EQ(SecondHeadDim(64), 32);
  EXPECT_EQ(SecondHeadDim(128), 64);
  EXPECT_EQ(SecondHeadDim(16), 32);
  EXPECT_DOUBLE_EQ(PairOverheadFlops(64, 1.5, 32, 1.0), 128);
  EXPECT_DOUBLE_EQ(PairOverheadFlops(64, 2.0, 32, 1.0), 0);  // pure matmul: k = 0
  EXPECT_DOUBLE_EQ(PairOverheadFlops(64, 2.5, 32, 1.0), 0);  // faster than matmul: clamped
  EXPECT_DOUBLE_EQ(PairOverheadFlops(64, 1.0, 32, 1.0), 0);  // equal times: no k
  HeadDimTarget target(MakeTruth(true), 64, 2, 128);
  auto r = Calibrate(target, Spec(1, true));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(r->topology.gpu.pair_overhead_flops, 128);
  EXPECT_EQ(r->topology.gpu.efficiency_head_dim, 64);
  // The fitted file then predicts head dim 32 at (1 + 128 / 256) / (1 + 128 / 128) = 0.75 of
  // the FLOP rate at 64, as the target runs it: per FLOP, (128 + 128) / 128 against
  // (256 + 128) / 256, 2 against 1.5.
  EXPECT_DOUBLE_EQ(r->topology.gpu.HeadDimRateFactor(32), 0.75);
  // A target that cannot run another head dim leaves the term at 0.
  KnownTarget plain(MakeTruth(true), 64, 2);
  auto p = Calibrate(plain, Spec(1, true));
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_DOUBLE_EQ(p->topology.gpu.pair_overhead_flops, 0);
}

TEST(Calibrate, SaysOneLinePerPhaseAsCalibrationPhasesCounts) {
  // 4 ranks: sharing, 3 kernel rounds, merges, messages = 6 lines; with the head-dim term 7;
  // one rank has no sharing or messages: 3 rounds and merges = 4.
  for (const auto& [ranks, head_dims, expected] :
       {std::tuple{4, false, 6}, std::tuple{4, true, 7}, std::tuple{1, false, 4}}) {
    KnownTarget known(MakeTruth(true), 64, 2);
    HeadDimTarget with_head_dims(MakeTruth(true), 64, 2, 128);
    CalibrationTarget& target = head_dims ? static_cast<CalibrationTarget&>(with_head_dims)
                                          : static_cast<CalibrationTarget&>(known);
    int lines = 0;
    auto r = Calibrate(target, Spec(ranks, true), [&lines](const std::string&) { ++lines; });
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(lines, expected) << ranks << " ranks";
    EXPECT_EQ(CalibrationPhases(target, Spec(ranks, true)), expected) << ranks << " ranks";
  }
}

TEST(Calibrate, OneRankNeedsNoSharingOrMessages) {
  KnownTarget target(MakeTruth(true), 64, 2);
  auto r = Calibrate(target, Spec(1, true));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->topology.gpu.ranks_per_device, 1);
  EXPECT_EQ(r->topology.num_gpus(), 1);
  EXPECT_TRUE(r->messages.empty());
}

TEST(Calibrate, AFailedMeasurementNamesWhatWasMeasured) {
  KnownTarget target(MakeTruth(true), 64, 2);
  target.fail_merge = true;
  auto r = Calibrate(target, Spec(2, true));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("merge of 1024 rows"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("injected failure"), std::string::npos)
      << r.status().message();
}

TEST(Calibrate, RefusesABadSpec) {
  KnownTarget target(MakeTruth(true), 64, 2);
  CalibrationSpec s = Spec(0, true);
  auto r = Calibrate(target, s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidInput);
  EXPECT_NE(r.status().message().find("--ranks"), std::string::npos);
  s = Spec(2, true);
  s.head_dim = 0;
  EXPECT_FALSE(Calibrate(target, s).ok());
}

}  // namespace
}  // namespace meshplan::exec

namespace meshplan::exec {
namespace {

TEST(CalibrationBlockSizes, TheDenseTailOnlyForFewRanks) {
  // 4096-token samples hold 64 MiB of scores per rank: measured for up to 16 ranks, not beyond.
  const std::vector<int64_t> quick = {128, 512, 2048, 4096},
                             full = {128, 256, 512, 1024, 2048, 4096};
  EXPECT_EQ(CalibrationBlockSizes(true, 16), quick);
  EXPECT_EQ(CalibrationBlockSizes(false, 2), full);
  EXPECT_EQ(CalibrationBlockSizes(false, 17), (std::vector<int64_t>{128, 256, 512, 1024, 2048}));
  // Heads: the spec's up to 2048; at 4096 a quarter (same FLOPs as a 2048 block), at least 1.
  EXPECT_EQ(SampleHeads(2048, 8), 8);
  EXPECT_EQ(SampleHeads(4096, 8), 2);
  EXPECT_EQ(SampleHeads(4096, 2), 1);
  EXPECT_EQ(SampleHeads(8192, 8), 1);
}

}  // namespace
}  // namespace meshplan::exec
