#include "executor/calibration/calibration.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "core/cost/kernel_time.h"
#include "planner/context.h"

namespace meshplan::exec {
namespace {

// Rounds to `digits` significant digits, so the written file reads like a hand-made one and does
// not claim precision the measurement does not have.
double Significant(double x, int digits) {
  if (!(x > 0)) return x;
  const double scale = std::pow(10.0, digits - 1 - static_cast<int>(std::floor(std::log10(x))));
  return std::round(x * scale) / scale;
}

// The y > 0 minimising sum_i (a_i y - 1)^2: the scale that makes model / measured = a_i y closest
// to 1 in relative terms. y = sum a / sum a^2.
double RelativeScale(const std::vector<double>& a) {
  double s1 = 0, s2 = 0;
  for (double x : a) {
    s1 += x;
    s2 += x * x;
  }
  return s2 > 0 ? s1 / s2 : 1.0;
}

// t = latency + bytes / bandwidth, with the latency from the smallest message (bandwidth hardly
// shows there) and the bandwidth the median of bytes / (t - latency) over messages of at least
// kBandwidthBytes (latency hardly shows there; these are the sizes a run's shards have). A
// least-squares line would let the small messages' scatter tilt the bandwidth, and copies slow
// down once a message outgrows the caches, which no line through all sizes follows.
constexpr int64_t kBandwidthBytes = 1 << 20;
void FitMessages(const std::vector<MessageSample>& s, double* latency_s, double* bytes_per_s) {
  const MessageSample& smallest = *std::min_element(
      s.begin(), s.end(),
      [](const MessageSample& a, const MessageSample& b) { return a.bytes < b.bytes; });
  *latency_s = smallest.measured_s;
  std::vector<double> rates;
  for (const MessageSample& m : s) {
    if (m.bytes >= kBandwidthBytes && m.measured_s > *latency_s) {
      rates.push_back(static_cast<double>(m.bytes) / (m.measured_s - *latency_s));
    }
  }
  if (rates.empty()) {  // no large message, or none slower than the smallest: all latency
    const MessageSample& largest = *std::max_element(
        s.begin(), s.end(),
        [](const MessageSample& a, const MessageSample& b) { return a.bytes < b.bytes; });
    rates.push_back(static_cast<double>(largest.bytes) / largest.measured_s);
  }
  *bytes_per_s = Median(rates);
}

void Residuals(const std::vector<double>& r, double* median, double* max) {
  *median = Median(r);
  *max = r.empty() ? 0 : *std::max_element(r.begin(), r.end());
}

}  // namespace

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

double FairEndSeconds(const std::vector<double>& ends_s, double work_s, int processors) {
  const double median_end = Median(ends_s);
  if (processors <= 0 || !(work_s > 0)) return median_end;
  return std::max(median_end, work_s / static_cast<double>(processors));
}

double SpreadWorkSeconds(const std::vector<double>& ends_s, const std::vector<double>& cpu_s,
                         int processors) {
  const double work_s = std::accumulate(cpu_s.begin(), cpu_s.end(), 0.0);
  const int ranks = static_cast<int>(cpu_s.size());
  if (processors <= 0 || ranks == 0 || !(work_s > 0)) return FairEndSeconds(ends_s, 0, 0);
  return work_s / static_cast<double>(std::min(processors, ranks));
}

std::vector<double> RoundTimeFactors(const std::vector<std::vector<double>>& rounds_s) {
  size_t rounds = 0;
  for (const auto& sample : rounds_s) rounds = std::max(rounds, sample.size());
  std::vector<double> factors;
  for (size_t r = 0; r < rounds; ++r) {
    std::vector<double> ratios;
    for (const auto& sample : rounds_s) {
      const double median = Median(sample);
      if (r < sample.size() && median > 0) ratios.push_back(sample[r] / median);
    }
    factors.push_back(Median(ratios));
  }
  return factors;
}

void SummarizeSpeed(const std::vector<double>& reference_s,
                    const std::vector<double>& round_factors, int64_t head_dim,
                    CalibrationRecord* record) {
  if (reference_s.empty()) return;
  record->reference_block_s = Significant(Median(reference_s), 4);
  record->reference_head_dim = head_dim;
  const std::vector<double>& drift = round_factors.empty() ? reference_s : round_factors;
  const auto [lo, hi] = std::minmax_element(drift.begin(), drift.end());
  record->speed_spread = *lo > 0 ? std::round((*hi / *lo - 1.0) * 1000) / 1000 : 0;
}

double PieceMedianResidual(const CalibrationResult& result, BlockPiece piece) {
  std::vector<double> residuals;
  for (const KernelSample& k : result.kernels) {
    if (k.piece == piece && k.measured_s > 0)
      residuals.push_back(std::abs(k.model_s / k.measured_s - 1.0));
  }
  return Median(residuals);
}

Status CheckCalibrationSpec(const CalibrationSpec& s) {
  if (s.ranks < 1 || s.ranks > kMaxCalibrationRanks)
    return Status::Invalid("--ranks: must be in 1..256, got " + std::to_string(s.ranks));
  if (s.head_dim < 1 || s.head_dim > 1024) {
    return Status::Invalid("--head-dim: must be in 1..1024, got " + std::to_string(s.head_dim));
  }
  if (s.heads < 1 || s.heads > 1024)
    return Status::Invalid("--heads: must be in 1..1024, got " + std::to_string(s.heads));
  if (!(s.memory_bytes > 0))
    return Status::Invalid("calibrate: the device's memory size is unknown");
  return Status::Ok();
}

std::string_view BlockPieceName(BlockPiece piece) {
  switch (piece) {
    case BlockPiece::kFull:
      return "full";
    case BlockPiece::kDiagonal:
      return "diagonal";
    case BlockPiece::kPartial:
      return "partial";
    case BlockPiece::kChunked:
      return "chunked";
  }
  return "full";
}

void PiecePositions(BlockPiece piece, int64_t n, std::vector<int64_t>* q, std::vector<int64_t>* k) {
  q->resize(static_cast<size_t>(n));
  k->resize(static_cast<size_t>(n));
  const int64_t half = n / 2;
  for (int64_t i = 0; i < n; ++i) {
    switch (piece) {
      case BlockPiece::kFull:
      case BlockPiece::kDiagonal:
        (*q)[i] = i;
        (*k)[i] = i;
        break;
      case BlockPiece::kPartial:
        (*q)[i] = half + i;
        (*k)[i] = i;
        break;
      case BlockPiece::kChunked:  // second halves shifted by n/2: [n/2, n) u [3n/2, 2n), [0, n/2) u
                                  // [n, 3n/2)
        (*q)[i] = half + i + (i >= half ? half : 0);
        (*k)[i] = i + (i >= half ? half : 0);
        break;
    }
  }
}

int64_t PieceVisiblePairs(BlockPiece piece, int64_t n) {
  if (piece == BlockPiece::kFull) return n * n;
  std::vector<int64_t> q, k;
  PiecePositions(piece, n, &q, &k);  // keys ascending: a query sees the keys up to its position
  int64_t pairs = 0;
  for (int64_t qp : q) pairs += std::upper_bound(k.begin(), k.end(), qp) - k.begin();
  return pairs;
}

int64_t PieceCutRows(BlockPiece piece, int64_t n) {
  switch (piece) {
    case BlockPiece::kDiagonal:
      return n - 1;  // query q sees keys [0, q]: all but the last row cut
    case BlockPiece::kPartial:
      return n / 2 - 1;  // queries [n/2, n - 1) see keys [0, q]; from n - 1 on they see all
    case BlockPiece::kFull:
    case BlockPiece::kChunked:
      return 0;  // every chunk pair whole or hidden
  }
  return 0;
}

double PieceCutRowsPerPair(BlockPiece piece, int64_t n) {
  return static_cast<double>(PieceCutRows(piece, n)) /
         static_cast<double>(PieceVisiblePairs(piece, n));
}

std::vector<int64_t> CalibrationBlockSizes(bool quick, int ranks) {
  std::vector<int64_t> sizes = quick ? std::vector<int64_t>{128, 512, 2048, 4096}
                                     : std::vector<int64_t>{128, 256, 512, 1024, 2048, 4096};
  if (ranks > kMaxTailRanks) {
    sizes.erase(
        std::remove_if(sizes.begin(), sizes.end(), [](int64_t n) { return n > kAllPiecesTokens; }),
        sizes.end());
  }
  return sizes;
}

int64_t SampleHeads(int64_t n, int64_t spec_heads) {
  if (n <= kAllPiecesTokens) return spec_heads;
  const double scale = static_cast<double>(kAllPiecesTokens) / static_cast<double>(n);
  return std::max<int64_t>(1,
                           static_cast<int64_t>(static_cast<double>(spec_heads) * scale * scale));
}

std::vector<int64_t> CalibrationMessageSizes(bool quick) {
  if (quick) return {4096, 1 << 20, 4 << 20, 16 << 20};
  return {4096, 65536, 1 << 20, 2 << 20, 4 << 20, 8 << 20, 16 << 20};
}

namespace {

void Say(const CalibrationProgress& progress, const std::string& line) {
  if (progress) progress(line);
}

}  // namespace

EndLag FitEndLag(double f1_s, double lag1_s, double f2_s, double lag2_s) {
  EndLag out;
  if (!(f2_s > f1_s)) {
    out.time_s = std::max(0.0, (lag1_s + lag2_s) / 2);
    return out;
  }
  out.fraction = (lag2_s - lag1_s) / (f2_s - f1_s);
  out.time_s = lag1_s - out.fraction * f1_s;
  if (out.fraction < 0) {
    out.fraction = 0;
    out.time_s = std::max(0.0, (lag1_s + lag2_s) / 2);
  } else if (out.time_s < 0) {
    out.time_s = 0;
    out.fraction = (lag1_s * f1_s + lag2_s * f2_s) / (f1_s * f1_s + f2_s * f2_s);
  }
  out.fraction = std::min(out.fraction, 1.0);
  return out;
}

namespace {

// Phase 1, sharing: how the device serves its ranks' kernels at once. Measured first because
// the kernels are measured on every rank at once and converted with it. Sets out.sharing and the
// GPU's ranks_per_device, copies_take_compute, concurrent_kernels and sharing (the last two only
// for several ranks).
Status MeasureSharing(CalibrationTarget& target, const CalibrationSpec& spec,
                      const CalibrationProgress& progress, CalibrationResult& out) {
  GpuSpec& gpu = out.topology.gpu;
  out.sharing.ranks = spec.ranks;
  gpu.ranks_per_device = spec.ranks;
  gpu.copies_take_compute = spec.ranks > 1 && target.CopiesTakeCompute();
  if (spec.ranks <= 1) return Status::Ok();
  // A block size every mode measures, repeated to about `share_s` alone: scheduler time slices
  // (milliseconds) must average out, as they do over a run's many kernels.
  const int64_t share_n = 512;
  const double share_s = spec.quick ? 0.15 : 0.3;
  auto block_s = target.KernelSeconds(BlockPiece::kFull, share_n, spec.heads, false, 1);
  if (!block_s.ok()) return block_s.status().WithContext("calibrate: a block of 512 alone");
  if (!(*block_s > 0)) return Status::Internal("calibrate: a kernel measured no time");
  const int share_repeats =
      static_cast<int>(std::clamp(std::ceil(share_s / *block_s), 1.0, 10000.0));
  Say(progress, "sharing: " + std::to_string(spec.ranks) + " ranks run " +
                    std::to_string(share_repeats) + " blocks of " + std::to_string(share_n) +
                    " at once (then " + std::to_string(kLongRaceFactor * share_repeats) +
                    " if they time-slice more ranks than it runs at full rate)");
  std::vector<double> concurrency_by_last, concurrency_by_median, spreads, late_fractions, lags,
      fair_ends, alone;
  std::vector<double> ends;
  const int processors = target.Processors();
  // One trial of `repeats` blocks a rank: one rank alone, then all at once. Appends to `lags`
  // and `fair_ends` (and, where `all_stats`, to the other statistics).
  auto race = [&](int repeats, bool all_stats, std::vector<double>& race_lags,
                  std::vector<double>& race_fair_ends) -> Status {
    auto one = target.ConcurrentEndsSeconds(1, share_n, repeats);
    if (!one.ok()) return one.status().WithContext("calibrate: one rank alone");
    auto all = target.ConcurrentEndsSeconds(spec.ranks, share_n, repeats);
    if (!all.ok())
      return all.status().WithContext("calibrate: " + std::to_string(spec.ranks) +
                                      " ranks at once");
    if (one->size() != 1 || all->size() != static_cast<size_t>(spec.ranks)) {
      return Status::Internal("calibrate: sharing measurement returned the wrong number of ranks");
    }
    const auto [first, latest] = std::minmax_element(all->begin(), all->end());
    if (!(*latest > 0) || !((*one)[0] > 0))
      return Status::Internal("calibrate: a sharing run measured no time");
    // Served in turn (serial), work of `ranks` kernels over the time the last one took is the
    // device's effective parallelism. Time-sliced (processor), equal kernels end together but
    // for the scheduler: a lag of the last behind the others (GpuSpec::sharing_end_lag_s,
    // sharing_end_lag_fraction), and a thread that had a core to itself for a while ending early
    // (3 threads on 2 cores: ends 1, 1.5, 1.5 alone-times). The median end is the fair one in both
    // cases, so there the work over the median end is the parallelism and the last end's distance
    // from it the lag. Serial ends spread evenly below the last, so the median lies well below it.
    //
    // On a device of known processors the fair end is never before their full share: 3 threads
    // on 2 cores measured here ended at 1.25, 1.43 and 1.65 alone-times (one had a core to itself
    // for a while), a median that read as 2.1 kernels at full rate on 2 cores and put the lag at
    // 0.22 alone-times instead of 0.15 past the fair 1.5.
    const double work_s = static_cast<double>(spec.ranks) * (*one)[0];
    const double fair_end = FairEndSeconds(*all, work_s, processors);
    race_lags.push_back(std::max(0.0, *latest - fair_end));
    race_fair_ends.push_back(fair_end);
    if (all_stats) {
      const double median_end = Median(*all);
      concurrency_by_last.push_back(work_s / *latest);
      concurrency_by_median.push_back(work_s / fair_end);
      spreads.push_back((*latest - *first) / *latest);
      late_fractions.push_back((*latest - median_end) / *latest);
      alone.push_back((*one)[0]);
      if (ends.empty()) ends = *all;
    }
    return Status::Ok();
  };
  for (int trial = 0; trial < kSharingTrials; ++trial)
    MESHPLAN_RETURN_IF_ERROR(race(share_repeats, true, lags, fair_ends));
  out.sharing.alone_s = Median(alone);
  out.sharing.ends_s = ends;
  out.sharing.spread = Median(spreads);
  // Served one after another, the median end of ranks > c lies at least a quarter of the last
  // end before it (ends 1, 2: 1.5 against 2; 1, 1, 2, 2: 1.5 against 2; more ranks, further);
  // time-sliced, at the last end but for the lag (a few percent here). A fifth between.
  gpu.sharing = Median(late_fractions) > 0.2 ? DeviceSharing::kSerial : DeviceSharing::kProcessor;
  const bool processor = gpu.sharing == DeviceSharing::kProcessor;
  gpu.concurrent_kernels =
      std::clamp(Significant(Median(processor ? concurrency_by_median : concurrency_by_last), 2),
                 1.0, static_cast<double>(spec.ranks));
  // Serial sharing's staggered ends are its model; only time-slicing has a lag beside it. The
  // lag is the mean over the trials, not the median: it comes in shapes (3 threads on 2 cores:
  // no lag when one thread has a core to itself and the other two share one, a sixth of the
  // alone time when one thread shares a core throughout, in about half the trials each), so the
  // median of 5 is either, and a run's expected lag is the mean.
  auto mean = [](const std::vector<double>& v) {
    return std::accumulate(v.begin(), v.end(), 0.0) /
           static_cast<double>(std::max<size_t>(1, v.size()));
  };
  out.sharing.end_lag_s = mean(lags);
  out.sharing.fair_end_s = mean(fair_ends);
  if (!processor || static_cast<double>(spec.ranks) <= gpu.concurrent_kernels) {
    gpu.sharing_end_lag_s = 0;
    gpu.sharing_end_lag_fraction = 0;
    return Status::Ok();
  }
  // The same race kLongRaceFactor times as long: whether the lag grows with the run (at P = 3 on
  // 2 cores it does, by a tenth of the run; at P = 6 it is a time: docs/fidelity.md).
  std::vector<double> long_lags, long_fair_ends;
  for (int trial = 0; trial < kSharingTrials; ++trial)
    MESHPLAN_RETURN_IF_ERROR(
        race(kLongRaceFactor * share_repeats, false, long_lags, long_fair_ends));
  out.sharing.long_end_lag_s = mean(long_lags);
  out.sharing.long_fair_end_s = mean(long_fair_ends);
  const EndLag lag = FitEndLag(out.sharing.fair_end_s, out.sharing.end_lag_s,
                               out.sharing.long_fair_end_s, out.sharing.long_end_lag_s);
  gpu.sharing_end_lag_s = Significant(lag.time_s, 3);
  gpu.sharing_end_lag_fraction = Significant(lag.fraction, 3);
  return Status::Ok();
}

// Phase 2, kernels: every sample of blocks of `sizes` tokens into out.kernels (piece, size,
// direction, FLOPs, measured_s), in kCalibrationRounds rounds over every sample; each sample's
// time is the median of its rounds. A burst of noise on a shared machine (another tenant, a
// page-cache flush) then hits one round of many samples instead of every repetition of one, which
// a single pass would turn into one bad point of the curve. Needs MeasureSharing's
// concurrent_kernels.
Status MeasureKernels(CalibrationTarget& target, const CalibrationSpec& spec,
                      const std::vector<int64_t>& sizes, const CalibrationProgress& progress,
                      const std::function<Status()>& time_reference, CalibrationResult& out) {
  const double d = static_cast<double>(spec.head_dim);
  std::vector<std::vector<double>> rounds_s;  // per sample, in out.kernels order
  for (int round = 0; round < kCalibrationRounds; ++round) {
    Say(progress, "kernels: round " + std::to_string(round + 1) + "/" +
                      std::to_string(kCalibrationRounds) + ": blocks of " +
                      std::to_string(sizes.front()) + " to " + std::to_string(kAllPiecesTokens) +
                      " tokens, full, diagonal, partial and chunked, forward and backward; full "
                      "forward blocks of " +
                      std::to_string(sizes.back()));
    size_t sample = 0;
    for (const int64_t n : sizes) {
      const int64_t sample_heads = SampleHeads(n, spec.heads);
      for (BlockPiece piece : kBlockPieces) {
        for (bool backward : {false, true}) {
          if (n > kAllPiecesTokens && (piece != BlockPiece::kFull || backward)) continue;
          auto seconds = target.KernelSeconds(piece, n, sample_heads, backward, spec.ranks);
          if (!seconds.ok()) {
            return seconds.status().WithContext("calibrate: " + std::string(BlockPieceName(piece)) +
                                                " block " + std::to_string(n) +
                                                (backward ? " backward" : " forward"));
          }
          if (!(*seconds > 0)) return Status::Internal("calibrate: a kernel measured no time");
          if (round == 0) {
            KernelSample k;
            k.piece = piece;
            k.n = n;
            k.backward = backward;
            k.flops = 4.0 * static_cast<double>(PieceVisiblePairs(piece, n)) *
                      static_cast<double>(sample_heads) * d *
                      (backward ? kBackwardFlopsFactor : 1.0);
            out.kernels.push_back(k);
            rounds_s.emplace_back();
          }
          rounds_s[sample++].push_back(*seconds);
        }
      }
    }
    MESHPLAN_RETURN_IF_ERROR(time_reference());
  }
  // Every rank of the device ran each sample at once, as a run keeps them busy; the model wants
  // the time alone, which sharing stretches by ranks / min(concurrent, ranks). Dividing by that
  // stretch makes the model exact for the all-busy device whatever the sharing measurement's own
  // error, which then only moves plans that leave ranks idle.
  const GpuSpec& gpu = out.topology.gpu;
  const double stretch = static_cast<double>(spec.ranks) /
                         std::min(gpu.concurrent_kernels, static_cast<double>(spec.ranks));
  for (size_t i = 0; i < out.kernels.size(); ++i)
    out.kernels[i].measured_s = Median(rounds_s[i]) / stretch;
  out.round_time_factors = RoundTimeFactors(rounds_s);
  return Status::Ok();
}

// Phase 3, the kernel model from the samples: the curve from full blocks (one dense product
// each: peak_tflops and attention_efficiency per size); the masked pieces' and the backward's
// rates relative to it, one ratio each, fitted over every sample of their kind
// (cut_row_extra_pairs, backward_rate_ratio); then each sample's model_s and the residuals.
void FitKernels(const std::vector<int64_t>& sizes, CalibrationResult& out) {
  GpuSpec& gpu = out.topology.gpu;
  double peak = 0;  // FLOP/s: the fastest full forward block
  for (const KernelSample& k : out.kernels) {
    if (!k.backward && k.piece == BlockPiece::kFull) peak = std::max(peak, k.flops / k.measured_s);
  }
  const double peak_tflops = Significant(peak / 1e12, 4);
  peak = peak_tflops * 1e12;
  for (int64_t n : sizes) {
    for (const KernelSample& k : out.kernels) {
      if (k.n == n && !k.backward && k.piece == BlockPiece::kFull) {
        const double efficiency =
            std::clamp(Significant(k.flops / k.measured_s / peak, 3), 1e-3, 1.0);
        gpu.attention_efficiency.push_back({n, efficiency});
      }
    }
  }
  gpu.peak_tflops = {
      {DType::kBf16, peak_tflops}, {DType::kFp16, peak_tflops}, {DType::kFp32, peak_tflops}};
  // A sample's slowdown over a dense block of its size, as the simulator charges it:
  // 1 + cut rows per visible pair x cut_row_extra_pairs.
  auto cut_slowdown = [&gpu](const KernelSample& k) {
    return 1.0 + PieceCutRowsPerPair(k.piece, k.n) * gpu.cut_row_extra_pairs;
  };
  {
    // The cut forward samples: with a = dense model time / measured and c = a x cut rows per
    // pair, the relative residual is a + c W - 1; least squares over W: sum c (1 - a) / sum c^2.
    // Only sizes whose full forward block reaches kCutFitMinEfficiency of the peak, where any
    // does: below it a block's time is the floor of issuing it (a GPU engine's host work per op,
    // tens of microseconds), the same for a masked block as for a full one, and says nothing of
    // what the mask costs. Measured on an H200 (docs/gpu-results.md, 2026-11-28): 128- and
    // 512-token blocks at 1% and 14% of the peak pulled the fit to 80 pairs per cut row; the 2K
    // samples alone give 530, where torch's cuDNN on the same GPU gives 578. A CPU's blocks are
    // all above it (96-100%), so its fit is unchanged.
    const auto kernel_bound = [&gpu](int64_t n) {
      return gpu.Efficiency(n) >= kCutFitMinEfficiency;
    };
    const bool any_bound = std::any_of(out.kernels.begin(), out.kernels.end(), [&](auto& k) {
      return !k.backward && PieceCutRows(k.piece, k.n) > 0 && kernel_bound(k.n);
    });
    double num = 0, den = 0;
    for (const KernelSample& k : out.kernels) {
      if (k.backward || PieceCutRows(k.piece, k.n) == 0) continue;
      if (any_bound && !kernel_bound(k.n)) continue;
      const double a = k.flops / (peak * gpu.Efficiency(k.n) * k.measured_s);
      const double c = a * PieceCutRowsPerPair(k.piece, k.n);
      num += c * (1.0 - a);
      den += c * c;
    }
    if (den > 0) gpu.cut_row_extra_pairs = std::clamp(Significant(num / den, 3), 0.0, 1e6);
  }
  {
    std::vector<double> b;  // each backward sample's rate over its forward model's
    for (const KernelSample& k : out.kernels) {
      if (k.backward)
        b.push_back(k.flops * cut_slowdown(k) / (peak * gpu.Efficiency(k.n) * k.measured_s));
    }
    gpu.backward_rate_ratio = std::clamp(Significant(1.0 / RelativeScale(b), 3), 0.01, 100.0);
  }
  std::vector<double> kernel_residuals;
  for (KernelSample& k : out.kernels) {
    const double rate = peak * gpu.Efficiency(k.n) * (k.backward ? gpu.backward_rate_ratio : 1.0);
    k.model_s = k.flops * cut_slowdown(k) / rate;
    kernel_residuals.push_back(std::abs(k.model_s / k.measured_s - 1.0));
  }
  Residuals(kernel_residuals, &out.kernel_median_residual, &out.kernel_max_residual);
}

// Phase 4, merges: the simulator charges 3 x (partial bytes) / hbm bandwidth for one. Sets
// out.merge_bandwidths_bytes_per_s and the GPU's hbm_bytes_per_s.
Status MeasureMerges(CalibrationTarget& target, const CalibrationSpec& spec,
                     const CalibrationProgress& progress, CalibrationResult& out) {
  const double d = static_cast<double>(spec.head_dim), heads = static_cast<double>(spec.heads);
  Say(progress, "merges: folding partials of 1K and 4K rows");
  for (int64_t n : {int64_t{1024}, int64_t{4096}}) {
    auto seconds = target.MergeSeconds(n);
    if (!seconds.ok())
      return seconds.status().WithContext("calibrate: merge of " + std::to_string(n) + " rows");
    if (!(*seconds > 0)) return Status::Internal("calibrate: a merge measured no time");
    const double partial_bytes = static_cast<double>(n) * heads * (d + 1) * 4.0;  // O and LSE, fp32
    out.merge_bandwidths_bytes_per_s.push_back(3.0 * partial_bytes / *seconds);
  }
  GpuSpec& gpu = out.topology.gpu;
  gpu.hbm_bytes_per_s = Significant(Median(out.merge_bandwidths_bytes_per_s) / 1e9, 3) * 1e9;
  return Status::Ok();
}

// Phase 5, messages: the one network level between the ranks, fitted to one-way message times
// (out.messages and their residuals). One rank sends nothing; any valid level will do (needs
// MeasureMerges' hbm_bytes_per_s).
Result<NetworkLevel> MeasureMessages(CalibrationTarget& target, const CalibrationSpec& spec,
                                     const CalibrationProgress& progress, CalibrationResult& out) {
  NetworkLevel level;
  level.name = spec.transport;
  level.kind = LinkKind::kSwitch;
  level.group_size = spec.ranks;
  if (spec.ranks <= 1) {
    level.bandwidth_bytes_per_s = out.topology.gpu.hbm_bytes_per_s;
    level.latency_s = 0;
    return level;
  }
  Say(progress, "messages: one-way times over " + spec.transport);
  for (int64_t bytes : CalibrationMessageSizes(spec.quick)) {
    auto seconds = target.MessageSeconds(bytes);
    if (!seconds.ok())
      return seconds.status().WithContext("calibrate: message of " + std::to_string(bytes) +
                                          " bytes");
    if (!(*seconds > 0)) return Status::Internal("calibrate: a message measured no time");
    out.messages.push_back({bytes, *seconds, 0});
  }
  double latency_s = 0, bytes_per_s = 0;
  FitMessages(out.messages, &latency_s, &bytes_per_s);
  level.latency_s = Significant(latency_s * 1e6, 3) / 1e6;
  level.bandwidth_bytes_per_s = Significant(bytes_per_s / 1e9, 3) * 1e9;
  std::vector<double> residuals;
  for (MessageSample& m : out.messages) {
    m.model_s = level.latency_s + static_cast<double>(m.bytes) / level.bandwidth_bytes_per_s;
    residuals.push_back(std::abs(m.model_s / m.measured_s - 1.0));
  }
  Residuals(residuals, &out.message_median_residual, &out.message_max_residual);
  return level;
}

// The fitted machine as a topology: name, description, the device's model and memory, and the
// one network level; validated.
Status DescribeTopology(const CalibrationSpec& spec, const NetworkLevel& level,
                        CalibrationResult& out) {
  Topology& t = out.topology;
  GpuSpec& gpu = t.gpu;
  t.name = spec.name;
  std::ostringstream description;
  description << spec.device_model << ": " << spec.ranks << " rank" << (spec.ranks == 1 ? "" : "s")
              << " on one device over " << spec.transport << ", measured by meshplan calibrate"
              << (spec.quick ? " --quick" : "") << " (head dim " << spec.head_dim << ")";
  t.description = description.str();
  t.source = "calibrate";
  gpu.model = spec.device_model;
  gpu.memory_bytes = Significant(spec.memory_bytes / 1e9, 4) * 1e9;
  gpu.launch_overhead_s = 0;
  gpu.efficiency_head_dim = spec.head_dim;  // the curve's head dim (plans at others get a note)
  t.levels = {level};
  return t.Validate().WithContext("calibrate: the fitted topology");
}

}  // namespace

// The phases in order; each reads what the ones before it set.
double PairOverheadFlops(int64_t d1, double t1, int64_t d2, double t2) {
  if (!(t1 > 0 && t2 > 0) || d1 == d2) return 0;
  const double r = t1 / t2;
  if (std::fabs(r - 1) < 1e-9) return 0;
  const double k = 4.0 * (static_cast<double>(d1) - r * static_cast<double>(d2)) / (r - 1);
  return std::isfinite(k) ? std::clamp(k, 0.0, 1e6) : 0.0;
}

int CalibrationPhases(const CalibrationTarget& target, const CalibrationSpec& spec) {
  return (spec.ranks > 1 ? 2 : 0) + kCalibrationRounds + 1 +
         (target.MeasuresOtherHeadDims() ? 1 : 0);
}

int64_t SecondHeadDim(int64_t head_dim) { return head_dim >= 64 ? head_dim / 2 : head_dim * 2; }

namespace {

// The head-dim term: one full forward block of kHeadDimTokens at the spec's head dim and at
// SecondHeadDim, kCalibrationRounds times each (medians), the same heads. A target that cannot
// measure another head dim leaves the term at 0 (plans at other head dims then get a note).
constexpr int64_t kHeadDimTokens = 512;  // measured by both the quick and the full set
Status MeasureHeadDimTerm(CalibrationTarget& target, const CalibrationSpec& spec,
                          const CalibrationProgress& progress, CalibrationResult& out) {
  if (!target.MeasuresOtherHeadDims()) return Status::Ok();
  const int64_t other = SecondHeadDim(spec.head_dim);
  const int64_t heads = SampleHeads(kHeadDimTokens, spec.heads);
  std::vector<double> own, at_other;
  for (int round = 0; round < kCalibrationRounds; ++round) {
    MESHPLAN_ASSIGN_OR_RETURN(auto t_other,
                              target.KernelSecondsAtHeadDim(other, kHeadDimTokens, heads));
    MESHPLAN_ASSIGN_OR_RETURN(
        auto t_own, target.KernelSeconds(BlockPiece::kFull, kHeadDimTokens, heads, false, 1));
    at_other.push_back(t_other);
    own.push_back(t_own);
  }
  const double k =
      Significant(PairOverheadFlops(spec.head_dim, Median(own), other, Median(at_other)), 3);
  out.topology.gpu.pair_overhead_flops = k;
  if (progress) {
    char line[160];
    std::snprintf(line, sizeof line,
                  "head dims %lld and %lld: %.3g FLOPs of other work per pair and head",
                  static_cast<long long>(spec.head_dim), static_cast<long long>(other), k);
    progress(line);
  }
  return Status::Ok();
}

}  // namespace

Result<CalibrationResult> Calibrate(CalibrationTarget& target, const CalibrationSpec& spec,
                                    const CalibrationProgress& progress) {
  MESHPLAN_RETURN_IF_ERROR(CheckCalibrationSpec(spec));
  CalibrationResult out;
  const std::function<Status()> time_reference = [&]() -> Status {
    auto seconds = target.ReferenceBlockSeconds();
    if (!seconds.ok()) return seconds.status().WithContext("calibrate: the reference block");
    if (!(*seconds > 0)) return Status::Internal("calibrate: the reference block measured no time");
    out.reference_block_s.push_back(*seconds);
    return Status::Ok();
  };
  MESHPLAN_RETURN_IF_ERROR(time_reference());
  MESHPLAN_RETURN_IF_ERROR(MeasureSharing(target, spec, progress, out));
  MESHPLAN_RETURN_IF_ERROR(time_reference());
  const std::vector<int64_t> sizes = CalibrationBlockSizes(spec.quick, spec.ranks);
  MESHPLAN_RETURN_IF_ERROR(MeasureKernels(target, spec, sizes, progress, time_reference, out));
  FitKernels(sizes, out);
  MESHPLAN_RETURN_IF_ERROR(MeasureMerges(target, spec, progress, out));
  MESHPLAN_RETURN_IF_ERROR(time_reference());
  MESHPLAN_ASSIGN_OR_RETURN(auto level, MeasureMessages(target, spec, progress, out));
  MESHPLAN_RETURN_IF_ERROR(DescribeTopology(spec, level, out));
  // Not right after the messages: on the development VM the block read 30% slow there in 2 of 3
  // quick calibrations and normal one phase later (the aftermath of their 16 MiB buffers, not
  // the machine's speed), so the last time is taken after the last phase.
  MESHPLAN_RETURN_IF_ERROR(MeasureHeadDimTerm(target, spec, progress, out));
  MESHPLAN_RETURN_IF_ERROR(time_reference());
  SummarizeSpeed(out.reference_block_s, out.round_time_factors, spec.head_dim,
                 &out.topology.calibration);
  return out;
}

}  // namespace meshplan::exec
