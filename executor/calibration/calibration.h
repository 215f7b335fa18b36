// `meshplan calibrate`: measure the machine the executor runs on and describe it as a topology
// (core/cluster/topology.h) that plan, simulate and sweep read like any cluster file.
// docs/fidelity.md says how each number is measured and fitted.
//
// The measurements come from a CalibrationTarget (the CPU block kernels and a transport here, a
// target with known rates in the tests); Calibrate fits them to the planner's model:
//   - kernels: the peak rate (the fastest full block) and an efficiency per block size
//     (GpuSpec::attention_efficiency) from full blocks; one cut_row_extra_pairs over the
//     pieces whose pairs the mask cuts (causal diagonal and partial; the chunked piece is only
//     checked) and one backward_rate_ratio over every backward sample,
//     each the least-squares fit in relative time;
//   - merges: the memory bandwidth hbm_GBps that the simulator's merge time (3 x partial bytes /
//     bandwidth) needs to match;
//   - sharing: `ranks` ranks running the same kernel at once; their end times give the device's
//     effective parallelism (concurrent_kernels) and whether it time-slices (processor) or queues
//     (serial);
//   - messages: one-way times by size: latency from a small message, bandwidth from large ones
//     (the innermost level).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "core/cluster/topology.h"

namespace meshplan::exec {

// The mask pieces a block kernel meets. Positions of an n x n block (queries, keys), n even:
//   full:     any mask, every pair visible (n^2 pairs; run as a full mask);
//   diagonal: causal, queries and keys [0, n): n(n+1)/2 pairs (a rank's own causal block);
//   partial:  causal, queries [n/2, 3n/2), keys [0, n): a triangle cut off one corner, 7n^2/8 +
//             n/4 pairs for even n (shifted blocks, window and document edges);
//   chunked:  causal, queries [n/2, n) and [3n/2, 2n), keys [0, n/2) and [n, 3n/2): three of the
//             four chunk pairs wholly visible, one hidden, 3n^2/4 pairs (a zigzag off-diagonal
//             block). The mask cuts the block but no chunk pair: BlockWork counts no cut pair.
// The diagonal piece has n - 1 cut rows (rows that see some but not all of the block's keys), the
// partial piece n/2 - 1, the full and chunked pieces none. Calibrate fits cut_row_extra_pairs to
// the first two and checks the chunked piece against the dense rate the model gives it.
enum class BlockPiece { kFull, kDiagonal, kPartial, kChunked };
std::string_view BlockPieceName(BlockPiece piece);
inline constexpr BlockPiece kBlockPieces[] = {BlockPiece::kFull, BlockPiece::kDiagonal,
                                              BlockPiece::kPartial, BlockPiece::kChunked};
// The piece's query and key positions (n each), in the order a block holds its rows.
void PiecePositions(BlockPiece piece, int64_t n, std::vector<int64_t>* q, std::vector<int64_t>* k);
// Visible (query, key) pairs of the piece, counted query by query over its positions.
int64_t PieceVisiblePairs(BlockPiece piece, int64_t n);
// The piece's cut rows (BlockWork's sense, core/sequence/layout.h) and those per visible pair
// (Op::cut_rows_per_pair's sense).
int64_t PieceCutRows(BlockPiece piece, int64_t n);
double PieceCutRowsPerPair(BlockPiece piece, int64_t n);

// The machine's speed, as one small kernel shows it: one rank's full forward block of
// kReferenceBlockTokens tokens with one head, at the calibration's head dim (a few milliseconds;
// the kernel's steady rate on a CPU). Calibrate times it before its first phase and after each;
// `execute` times it before and after its runs and scales the prediction by the ratio
// (CalibrationRecord::reference_block_s; docs/fidelity.md, "The machine's speed"). It is there
// because the machine itself moves: a 2-core VM's block times drifted 23% in three minutes with
// nothing else running in it, and five calibrations disagreed by as much.
inline constexpr int64_t kReferenceBlockTokens = 512;

// What the executor's kernels and transport measure to. Every method returns seconds (a median of
// repetitions) or an error naming what failed.
class CalibrationTarget {
 public:
  virtual ~CalibrationTarget() = default;
  // One n x n block of `piece` with `heads` heads, forward or backward, run by `ranks` ranks at
  // once (each its own copy): the time their work takes spread evenly over the device, where the
  // target can tell it (the CPU target: the threads' CPU time over the cores they can use), else
  // when the last of them ended. Not the scheduler's placement of them: the last rank's lag is
  // the sharing phase's (GpuSpec::sharing_end_lag_s), charged once per plan; in every kernel's
  // time it would be charged twice.
  virtual Result<double> KernelSeconds(BlockPiece piece, int64_t n, int64_t heads, bool backward,
                                       int ranks) = 0;
  // Folding one partial (O and LSE of n rows, all heads, fp32) into an accumulator.
  virtual Result<double> MergeSeconds(int64_t n) = 0;
  // `ranks` ranks start `repeats` full forward n x n blocks each at once (one after another on
  // each rank); when each rank ended, from the common start.
  virtual Result<std::vector<double>> ConcurrentEndsSeconds(int ranks, int64_t n, int repeats) = 0;
  // One message of `bytes` from one rank to another, one way.
  virtual Result<double> MessageSeconds(int64_t bytes) = 0;
  // Whether the device's own processors make the copies between its ranks, so that they compute
  // nothing meanwhile (GpuSpec::copies_take_compute): a CPU's cores do, a GPU's copy engines not.
  virtual bool CopiesTakeCompute() const { return false; }
  // How many kernels the device can run at full rate at once where that is a count of
  // processors the target knows (a CPU whose block kernels are single-threaded: its hardware
  // threads); 0 where it is not (a GPU's ranks share SMs within kernels). The measured
  // parallelism never exceeds it: equal kernels time-sliced over these processors cannot all end
  // before ranks / processors alone-times, however the scheduler spreads their ends.
  virtual int Processors() const { return 0; }
  // The reference block (kReferenceBlockTokens), as KernelSeconds times it.
  virtual Result<double> ReferenceBlockSeconds() {
    return KernelSeconds(BlockPiece::kFull, kReferenceBlockTokens, 1, /*backward=*/false, 1);
  }
  // Whether the target can run kernels at another head dim than the spec's, and one full forward
  // n x n block at `head_dim` (`heads` heads, one rank): for the head-dim term
  // (GpuSpec::pair_overhead_flops). REQUIRES: MeasuresOtherHeadDims().
  virtual bool MeasuresOtherHeadDims() const { return false; }
  virtual Result<double> KernelSecondsAtHeadDim(int64_t /*head_dim*/, int64_t /*n*/,
                                                int64_t /*heads*/) {
    return Status::Internal("no kernels at another head dim");
  }
};

struct CalibrationSpec {
  int ranks = 2;           // P: ranks on the device (the topology's GPU slots)
  int64_t head_dim = 128;  // d of the kernels measured (efficiency depends on it)
  int64_t heads = 1;       // heads per kernel call
  bool quick = false;      // fewer sizes and repetitions
  std::string name = "machine";
  std::string device_model = "CPU";
  double memory_bytes = 0;            // the device's (shared by its ranks)
  std::string transport = "threads";  // names the innermost level
};

// Block sizes measured: quick 128, 512, 2048, 4096; else 128 to 4096 by powers of 2 (the curve
// clamps beyond); sizes beyond kAllPiecesTokens only for up to kMaxTailRanks ranks (each rank of
// a sample holds a dense block's n x n scores: 64 MiB at 4096). Each in kCalibrationRounds rounds.
// Blocks up to kAllPiecesTokens are measured in every piece, forward and backward, with the spec's
// heads; larger ones only as the full forward block that extends the efficiency curve (dense blocks
// that outgrow the caches slow down: Ulysses and its hybrids compute whole-sequence blocks), with
// SampleHeads heads to bound their cost.
std::vector<int64_t> CalibrationBlockSizes(bool quick, int ranks);
inline constexpr int64_t kAllPiecesTokens = 2048;
// The cut term (cut_row_extra_pairs) is fitted on the sizes whose full forward block runs at
// this fraction of the peak or more, where any do: smaller blocks bound by the cost of issuing
// them time the same masked or not (calibration.cc says what was measured).
inline constexpr double kCutFitMinEfficiency = 0.5;
inline constexpr int kMaxTailRanks = 16;
// Heads of the n-token samples: the spec's up to kAllPiecesTokens, then scaled by
// (kAllPiecesTokens / n)^2 (at least 1) so a sample costs no more FLOPs than one of that size.
int64_t SampleHeads(int64_t n, int64_t spec_heads);
// Message sizes measured (bytes): 4 KiB (the latency) and 1 to 16 MiB (the bandwidth), more in full
// mode.
std::vector<int64_t> CalibrationMessageSizes(bool quick);

struct KernelSample {
  BlockPiece piece = BlockPiece::kFull;
  int64_t n = 0;
  bool backward = false;
  double flops = 0;  // the model's: 4 * pairs * heads * d, x 2.5 backward
  double measured_s = 0;
  double model_s = 0;  // the fitted topology's time for it (UnsharedKernelSeconds)
};

struct MessageSample {
  int64_t bytes = 0;
  double measured_s = 0;
  double model_s = 0;  // latency + bytes / bandwidth
};

struct SharingMeasurement {
  int ranks = 1;
  double alone_s = 0;          // one rank alone
  std::vector<double> ends_s;  // each rank's end, all starting at once
  double spread = 0;           // (last end - first end) / last end
  // Last end - fair end (mean over the trials). The fair end is the median end, or the
  // processors' full share (ranks / Processors() alone-times) where that is later.
  double end_lag_s = 0;
  double fair_end_s = 0;  // the mean fair end of those trials
  // Where the ranks time-slice an oversubscribed device, the same race kLongRaceFactor times as
  // long: its mean lag and fair end (0: not run). The two races give the lag's time and its
  // fraction of the run (GpuSpec::sharing_end_lag_s, sharing_end_lag_fraction; FitEndLag).
  double long_end_lag_s = 0;
  double long_fair_end_s = 0;
};

// The head-dim term from one block measured at two head dims d1 and d2 (seconds t1, t2): a pair
// and head costs 4 d matmul FLOPs plus k more, so t1 / t2 = (4 d1 + k) / (4 d2 + k) and
// k = 4 (d1 - r d2) / (r - 1), r = t1 / t2. Clamped to [0, 1e6]; 0 when r gives no k (equal
// times, or a ratio the model cannot produce).
double PairOverheadFlops(int64_t d1, double t1, int64_t d2, double t2);
// The head dim calibrate measures beside the spec's: half of it from 64 up, else twice it.
int64_t SecondHeadDim(int64_t head_dim);

struct CalibrationResult {
  Topology topology;
  std::vector<KernelSample> kernels;
  std::vector<MessageSample> messages;
  SharingMeasurement sharing;
  std::vector<double> merge_bandwidths_bytes_per_s;  // per merge size measured
  // |model / measured - 1| over the kernel samples (and the message samples).
  double kernel_median_residual = 0, kernel_max_residual = 0;
  double message_median_residual = 0, message_max_residual = 0;
  // The reference block's times, before the first phase and after each (each kernel round
  // apart): their median is the machine's speed while calibrate ran (SummarizeSpeed).
  std::vector<double> reference_block_s;
  // Each kernel round's speed: the median over the samples of the round's time over the
  // sample's median time (1 for a machine that held still; a round taken 10% slow, 1.1).
  std::vector<double> round_time_factors;
};

// Per round, the median over samples of rounds_s[sample][round] / the sample's median over its
// rounds (RoundTimeFactors; empty without samples).
std::vector<double> RoundTimeFactors(const std::vector<std::vector<double>>& rounds_s);

// Into `record`: the median of the reference times (4 significant digits) with `head_dim`, and
// the machine's drift while it was measured, max / min - 1 of the kernel rounds' time factors
// (3 decimals): how far the rates fitted from the rounds' medians can be from the machine's
// speed at any one time. Sustained drift, not a stall: a round's factor is a median over every
// sample of it (hundreds of kernels over seconds), where a single reference time on the
// development VM read 30-40% slow in one of seven 0.1 s timings. Nothing for no reference times;
// the spread from the reference times where there are no rounds.
void SummarizeSpeed(const std::vector<double>& reference_s,
                    const std::vector<double>& round_factors, int64_t head_dim,
                    CalibrationRecord* record);
// Median |model / measured - 1| over the kernel samples of one piece (0 if none).
double PieceMedianResidual(const CalibrationResult& result, BlockPiece piece);

// One line per measurement group, for stderr.
using CalibrationProgress = std::function<void(const std::string& line)>;

inline constexpr int kMaxCalibrationRanks = 256;
// Rounds over every kernel sample (Calibrate takes each sample's median over them).
inline constexpr int kCalibrationRounds = 3;
// Trials of the sharing measurement (one rank alone, then all at once; the median of each
// statistic over them): the scheduler's spread of equal threads' ends varies from trial to trial
// (3 threads on 2 cores: lags of 7 to 50 ms in 0.2 s runs here).
inline constexpr int kSharingTrials = 5;
// How much longer the second race of the sharing phase is than the first (time-sliced devices).
inline constexpr int kLongRaceFactor = 3;

// The lag of the last rank as a time plus a fraction of the run, from the mean lags L1, L2 of
// races whose fair ends were F1 < F2: the line through the two points, lag = time + fraction x F.
// A negative fraction (the longer race lagged less: noise) gives fraction 0 and the mean of the
// two lags as the time; a negative time, the least-squares fraction through the origin and time 0;
// the fraction at most 1. F2 <= F1: the mean lag as the time.
struct EndLag {
  double time_s = 0;
  double fraction = 0;
};
EndLag FitEndLag(double f1_s, double lag1_s, double f2_s, double lag2_s);

// The median (mean of the two middle values for an even count; 0 for none): every repeated
// measurement of calibration is summarised by it, robust to the odd slow repetition.
double Median(std::vector<double> values);

// When `ends_s.size()` equal shares of `work_s` seconds of work (at full rate, all shares
// together), started at once on a device of `processors` processors, fairly end: their median
// end, or the processors' full share work_s / processors where that is later (the median alone
// can come early: 3 equal threads on 2 cores end at 1.33, 1.33 and 1.67 alone-times when one of
// them shares a core throughout, and no schedule ends 3 alone-times of work on 2 cores before
// 1.5). With processors 0 (unknown), or no work, the median end.
double FairEndSeconds(const std::vector<double>& ends_s, double work_s, int processors);

// The time of one run of equal kernels on several ranks at once, as a kernel sample takes it:
// their CPU time (`cpu_s`, per rank) summed and spread over the cores they can use,
// min(processors, ranks), leaving out where the scheduler placed them (a core left idle, one
// thread behind: the sharing phase's lag). With processors 0 (unknown) or no CPU time measured,
// FairEndSeconds of the ends alone, that is their median.
double SpreadWorkSeconds(const std::vector<double>& ends_s, const std::vector<double>& cpu_s,
                         int processors);

// How many times Calibrate calls `progress` for `spec` on `target`: once per phase, that is
// sharing and messages with more than one rank, each of the kCalibrationRounds kernel rounds,
// merges, and the head-dim term where the target measures other head dims. A progress bar's total.
int CalibrationPhases(const CalibrationTarget& target, const CalibrationSpec& spec);

// kInvalidInput naming the flag (--ranks, --head-dim, --heads) for a spec out of range.
Status CheckCalibrationSpec(const CalibrationSpec& spec);

// Measures with `target` and fits. kInvalidInput for a spec out of range (ranks 1..256, head_dim
// 1..1024, heads 1..1024); a failed measurement is returned as its error, with what was measured.
Result<CalibrationResult> Calibrate(CalibrationTarget& target, const CalibrationSpec& spec,
                                    const CalibrationProgress& progress = {});

}  // namespace meshplan::exec
