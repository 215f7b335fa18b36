// The cluster model: one GPU type and a hierarchy of network levels.
//
// Levels are listed innermost first. Level i groups `group_size` units of level i-1 (level 0
// groups GPUs), so the cluster has the product of all group sizes GPUs and GPU n sits in group
// floor(n / Span(i)) of level i. Two GPUs talk over the innermost level whose group holds both.
// Bandwidths are per GPU and per direction (vendors often quote NVLink duplex: half of that).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/dtype.h"
#include "core/base/status.h"

namespace meshplan {

// How the kernels of ranks that share one device divide it (GpuSpec::sharing).
enum class DeviceSharing {
  kProcessor,  // every running kernel progresses, at min(1, concurrent_kernels / running) of its
               // rate
  kSerial,     // in start order, kernel i (from 0) runs at clamp(concurrent_kernels - i, 0, 1) of
               // its rate: the first concurrent_kernels at full rate, later ones wait
};
std::string_view DeviceSharingName(DeviceSharing sharing);
Result<DeviceSharing> ParseDeviceSharing(std::string_view text);

enum class LinkKind {
  kSwitch,       // every GPU pair at full bandwidth (NVSwitch, one IB switch)
  kRailFatTree,  // rail-optimised leaf/spine: GPU i of each node on rail i; full bandwidth
                 // between same-rail GPUs, oversubscription applies to the spine
  kFatTree,      // generic fat tree with optional oversubscription
  kRing,         // bidirectional ring of groups: a message crosses the shortest way round
  kTorus,        // k-dimensional torus of groups (dims multiply to group_size)
  kFullMesh,     // a direct link between every pair of GPUs (AMD xGMI): the innermost level only;
                 // bandwidth_GBps is one link's, a GPU's port the sum of its group_size - 1 links
};
std::string_view LinkKindName(LinkKind kind);
Result<LinkKind> ParseLinkKind(std::string_view text);

// Attention-kernel efficiency (fraction of peak) for a block whose shorter side has
// `block_tokens` tokens. Interpolated linearly in log2(block_tokens), clamped at the ends.
struct EfficiencyPoint {
  int64_t block_tokens = 0;
  double efficiency = 0;
};

// The attention libraries a topology may hold a kernel curve for (--attention-kernel): the
// FlashAttention-2 and -3 kernels, cuDNN's fused attention, and meshplan's own kernels.
inline constexpr std::string_view kAttentionLibraries[] = {"fa2", "fa3", "cudnn", "own"};
bool IsAttentionLibrary(std::string_view name);

// One attention library's kernel rate on a GPU ([gpu.attention_kernels.NAME],
// topologies/README.md): the forward's fraction of peak by block size at head dim `head_dim`,
// the backward's rate relative to it, and the work per (query, key) pair and head that is not
// matrix products (exponent, scaling, masking), as FLOPs at the matmul rate, which sets how the
// rate falls with smaller head dims (GpuSpec::HeadDimRateFactor).
// How a library's kernels fill the GPU (issue 46, core/cost/kernel_occupancy.h): a forward kernel
// launches batch x heads x ceil(rows / forward_tile_rows) CTAs (query rows per CTA), a backward
// one batch x heads x ceil(keys / backward_tile_rows) (key rows per CTA), each resident
// `ctas_per_sm` at a time per SM, in waves over GpuSpec::sm_count SMs; the efficiency curve was
// measured with `curve_batch_heads` sequences x heads per call (0: at full occupancy). Tiles of 0
// (or no sm_count): not modelled, the curve's rate whatever the heads.
// A tile's other side (core/cost/document_tiles.h: packed documents round up to whole tiles):
// the keys a forward CTA takes per step of its loop (`forward_tile_keys`; causal calls
// `forward_causal_tile_keys` where the library picks another), the query rows a backward CTA
// takes per step (`backward_tile_queries`, `backward_causal_tile_queries`). 0: not stated (the
// causal ones: the same as the dense call's).
struct KernelOccupancy {
  int64_t forward_tile_rows = 0;
  int64_t forward_ctas_per_sm = 1;
  int64_t backward_tile_rows = 0;
  int64_t backward_ctas_per_sm = 1;
  int64_t curve_batch_heads = 0;
  int64_t forward_tile_keys = 0;
  int64_t forward_causal_tile_keys = 0;
  int64_t backward_tile_queries = 0;
  int64_t backward_causal_tile_queries = 0;
  bool operator==(const KernelOccupancy&) const = default;
};

struct AttentionKernelCurve {
  std::vector<EfficiencyPoint> efficiency;  // sorted by block_tokens, non-empty
  double backward_rate_ratio = 1.0;
  int64_t head_dim = 0;  // 0: not stated (the rate is then the same at every head dim)
  double pair_overhead_flops = 0;
  // Times a ring step's partials (O and LSE forward; dQ, dK and dV backward) cross HBM beyond
  // the kernel (GpuSpec::ring_step_partial_passes).
  double ring_step_partial_passes = 0;
  // Extra (query, key) pairs the kernel spends per query row a cut of the mask crosses inside a
  // block (GpuSpec::cut_row_extra_pairs).
  double cut_row_extra_pairs = 0;
  // Times the partials of a forward ring step whose causal diagonal is strict cross HBM beyond
  // ring_step_partial_passes (GpuSpec::sliced_merge_passes).
  double sliced_merge_passes = 0;
  KernelOccupancy occupancy;  // how its kernels fill the SMs (GpuSpec::occupancy)
  std::string source;         // where the points come from (papers, measurements)
};

struct GpuSpec {
  // The GPU catalog entry the cluster file named (topologies/gpus/, core/cluster/gpu_catalog.h),
  // its keys already laid under the file's own; "" when the file describes its GPU in full.
  std::string catalog;
  std::string model;
  // Streaming multiprocessors (compute units) the kernels' CTAs are spread over: with the active
  // library's `occupancy`, how fully a kernel of few heads fills the GPU. 0: not stated.
  int64_t sm_count = 0;
  std::map<DType, double> peak_tflops;  // dense tensor-core TFLOP/s per dtype
  // The fraction of peak_tflops[dtype] a large GEMM sustains (cuBLAS, full waves of tiles), per
  // dtype: the whole step's projections and MLP (core/cost/gemm_time.h). Empty: not stated, and
  // the whole step cannot be timed on this GPU.
  std::map<DType, double> gemm_efficiency;
  // The fraction of its kernels' rates alone (the GEMM and attention curves, HBM bandwidth) a
  // whole training step's compute sustains: the clock a step's power draw allows and the
  // framework's time between kernels, which kernel benchmarks leave out. It scales the compute of
  // `meshplan step` only (docs/training-step.md); 1: not stated.
  double step_kernel_rate_fraction = 1.0;
  double memory_bytes = 0;  // HBM capacity
  double hbm_bytes_per_s = 0;
  double launch_overhead_s = 0;                       // per kernel launch
  std::vector<EfficiencyPoint> attention_efficiency;  // sorted by block_tokens, non-empty
  // Backward kernels' FLOP rate over the forward's at the same block size (the backward's FLOPs
  // already count its recomputation, kBackwardFlopsFactor = 2.5x the forward's).
  double backward_rate_ratio = 1.0;
  // The head dim attention_efficiency was measured at, and the non-matmul work per (query, key)
  // pair and head in FLOPs at the matmul rate (AttentionKernelCurve): together they scale the
  // rate to other head dims (HeadDimRateFactor). 0 work: the rate does not depend on head dim.
  int64_t efficiency_head_dim = 0;  // 0: not stated
  double pair_overhead_flops = 0;
  // A ring step after the first writes its partials out of the kernel and merges them into the
  // running ones (the out/LSE correction forward; dQ accumulation, dK and dV partials backward):
  // that many times the step's partial bytes cross HBM (3 at least: read both, write one; a
  // library's merge in several elementwise kernels, format conversions and per-step launches add
  // more). 0: not charged (meshplan's own kernels fold into the accumulator in the kernel).
  // Charged by the planner's ring passes and by the simulator on the compute ops that carry
  // partial bytes (Op::bytes), at hbm_bytes_per_s (core/cost/kernel_time.h RingStepPartialSeconds).
  double ring_step_partial_passes = 0;
  // The library whose curve the fields above hold (attention_efficiency, backward_rate_ratio,
  // efficiency_head_dim, pair_overhead_flops, ring_step_partial_passes and cut_row_extra_pairs
  // below), and every library's curve, that one included
  // (Topology::UseAttentionKernel copies one into the fields). A file with only the [gpu]
  // fields holds one library, `attention_kernel` ("own" unless the file names it).
  std::string attention_kernel = "own";
  std::map<std::string, AttentionKernelCurve> attention_kernels;
  // Each query row that a cut of the mask crosses inside a block (Op::cut_rows_per_pair) costs
  // the kernel this many more (query, key) pairs at the block's rate: along the cut it works tile
  // by tile and masks pair by pair (a tiled kernel computes about half a tile per cut row). 0:
  // cuts cost nothing beyond their visible pairs. Part of the active library's curve.
  double cut_row_extra_pairs = 0;
  // A forward block whose causal diagonal is strict (its first query row sees none of its keys:
  // a striped shard against a later one) is one that flash-attn's causal call cannot express: a
  // ring built on it runs the block on the queries after the first against the keys before the
  // last, and merges that partial into a slice of the running output, which it then copies back
  // (ring-flash-attention 8996282, stripe_flash_attn.py and utils.py update_out_and_lse:
  // `out[slice_] = slice_out`, a read and a write of the rows' fp32 O and LSE). That many more
  // times such a step's partial bytes cross HBM (Op::sliced_bytes): 2 for the FlashAttention
  // libraries, 0 where the kernel takes the diagonal's offset (cuDNN, meshplan's own kernels).
  // Charged by the planner's ring passes and by the simulator alike (core/cost/kernel_time.h
  // SlicedMergeSeconds). Part of the active library's curve.
  double sliced_merge_passes = 0;
  // How the active library's kernels fill the SMs (KernelOccupancy); part of its curve.
  KernelOccupancy occupancy;

  // Ranks that share one physical device (a topology's "GPUs" are rank slots: slots
  // [n*k, n*k + k) are device n). 1: a device per rank. Ranks of one device share its compute
  // (below), its memory (memory_bytes is the device's) and its memory bandwidth; messages between
  // them are copies, described by the innermost level.
  int64_t ranks_per_device = 1;
  // Kernels the device runs at once at their full rate: 1 for a GPU (a second kernel shares the
  // SMs), the cores for a CPU whose block kernels are single-threaded. A measured value may be
  // fractional (2 hyper-threads of one core give about 1.2).
  double concurrent_kernels = 1;
  DeviceSharing sharing = DeviceSharing::kProcessor;
  // Messages between ranks of the device are copies made by the device's own processors, which
  // then do not compute (a CPU's cores pack and unpack them); false where copy engines or NICs
  // move them (a GPU). With it, the simulator counts every copy in flight inside a device as one
  // more runner among which the device divides itself (simulator/shared_device.h).
  bool copies_take_compute = false;
  // Time-slicing shares an oversubscribed device fairly only on average: when its ranks outnumber
  // the kernels it runs at full rate (ranks_per_device > concurrent_kernels, processor sharing),
  // the last of equal kernels started together ends after the fair end by
  //   sharing_end_lag_s + sharing_end_lag_fraction x the run's lag-free time,
  // charged once per run (core/cost/kernel_time.h SharedDeviceEndLagSeconds). The time is the
  // scheduler's few periods; the fraction is a placement that persists through the run (3 threads
  // on 2 cores: one keeping a core to itself for a while, the other two sharing one), so it grows
  // with the run: measured on 2 cores at P = 3, runs of 75, 154 and 323 ms ended 14, 24 and 39 ms
  // late (docs/fidelity.md). meshplan calibrate measures both at two race lengths; 0: not charged.
  double sharing_end_lag_s = 0;
  double sharing_end_lag_fraction = 0;

  // Makes `curve` the active one: copies it into the fields above (attention_efficiency ...
  // sliced_merge_passes), which the model reads. `attention_kernel` is the caller's to set.
  void UseCurve(const AttentionKernelCurve& curve);
  // REQUIRES: peak_tflops has dtype (Topology::Validate checks the dtypes the planner uses).
  double PeakFlopsPerSecond(DType dtype) const;
  double Efficiency(int64_t block_tokens) const;
  // Why a kernel time at `head_dim` is a guess: the curve was measured at another head dim and
  // has no non-matmul work term to carry it over ("" when head_dim is the curve's, or the term
  // is there). For a note beside a plan.
  std::string HeadDimCaveat(int64_t head_dim) const;
  // The kernel's rate at `head_dim` over its rate at efficiency_head_dim, both doing 4 * head_dim
  // matmul FLOPs and pair_overhead_flops (k) of other work per pair and head:
  // (1 + k / (4 * efficiency_head_dim)) / (1 + k / (4 * head_dim)). 1 when k = 0, when the curve
  // states no head dim, or head_dim <= 0 (a schedule made without a workload).
  double HeadDimRateFactor(int64_t head_dim) const;
  // The planner's steady state, every rank of a device computing at once: kernel time grows by
  // max(1, ranks_per_device / concurrent_kernels). (The simulator models the sharing op by op.)
  double SharedComputeSlowdown() const;
  // Memory one rank may use: the device's shared by its ranks.
  double MemoryPerRankBytes() const { return memory_bytes / static_cast<double>(ranks_per_device); }

  // Every [gpu] value in range ("gpu.KEY: reason"); Topology::Validate runs it first.
  Status Validate() const;
};

// Units of a level whose links differ from the level's own ([[level.fabric]], mixed fabrics:
// four IB nodes and one RoCE node on one network). A unit is a group of the level below (a GPU
// at level 0, a node at level 1), numbered from 0 over the whole cluster (gpu / Span(level - 1)).
// Each GPU of such a unit has this bandwidth and latency at the level instead of the level's;
// a message between two units is as fast as the slower end allows (min bandwidth, max latency).
struct LevelFabric {
  std::string name;  // "roce": a label for output
  // Inclusive ranges [first, last] of unit indices; disjoint from every other fabric's.
  std::vector<std::pair<int64_t, int64_t>> units;
  double bandwidth_bytes_per_s = 0;  // per GPU per direction
  double latency_s = 0;              // per message
  bool Holds(int64_t unit) const;
  int64_t UnitCount() const;
};

struct NetworkLevel {
  std::string name;  // "nvlink", "ib", ...
  LinkKind kind = LinkKind::kSwitch;
  int64_t group_size = 1;            // units of the level below in one group of this level
  double bandwidth_bytes_per_s = 0;  // per GPU per direction
  double latency_s = 0;              // per message
  double oversubscription = 1.0;     // >= 1: traffic crossing this level shares 1/oversubscription
  std::vector<int64_t> torus_dims;   // kTorus only; product == group_size
  // Units whose links differ (switch and fat-tree levels only: a ring's or torus's links follow
  // its coordinates). Empty: every unit has the level's bandwidth and latency.
  std::vector<LevelFabric> fabrics;
};

// Bounds Topology::Validate puts on a cluster, far beyond any real one, so that no value read
// from a file (memory_GB = 1e308) turns into an infinite or overflowing quantity downstream.
// In the file's units; topologies/README.md lists them.
inline constexpr int64_t kMaxTopologyGpus = 10'000'000;
inline constexpr double kMaxGpuMemoryGB = 1e6;  // memory_GB
// Rates may be far above any hardware, e.g. a network as good as free for a compute-bound study.
inline constexpr double kMaxBandwidthGBps = 1e12;  // hbm_GBps and every level's bandwidth_GBps
inline constexpr double kMaxPeakTflops = 1e12;     // every peak_tflops entry
inline constexpr double kMaxLatencyUs = 1e6;       // launch_overhead_us and latency_us (1 s)
inline constexpr double kMaxOversubscription = 1e6;
// Floors for rates, far below any real link or processor (1 MB/s; a MFLOP/s), so that a value like
// bandwidth_GBps = 1e-300 cannot make times of 60 digits.
inline constexpr double kMinBandwidthGBps = 1e-3;  // hbm_GBps and every level's bandwidth_GBps
inline constexpr double kMinPeakTflops = 1e-6;     // every peak_tflops entry

// What the training framework adds around the attention kernels ([framework] in a topology
// file, --step-overhead-ms on the command line).
struct FrameworkSpec {
  // Fixed time per attention call (the forward and the backward are one call each) that the
  // kernels and messages do not account for: the framework's Python, its launches and
  // synchronisations, allocator work. 0: not modelled. Added once per call to a plan's time by
  // the planner and the simulator alike (FrameworkOverheadSeconds, core/cost/kernel_time.h).
  double step_overhead_s = 0;
};
inline constexpr double kMaxStepOverheadUs = 1e7;  // 10 s

// The conditions a calibrated file was measured under ([calibration], written by `meshplan
// calibrate`): a run under other conditions should not expect its prediction to hold.
// A calibration whose reference block moved more than this while calibrate ran gets a note on
// every plan made with it: the 5% issue 48 asks of two calibrations of one machine.
inline constexpr double kSpeedSpreadNote = 0.05;
// The most calibrations `calibrate --draws` combines (each one to two minutes on a CPU).
inline constexpr int64_t kMaxCalibrationDraws = 9;

struct CalibrationRecord {
  double load_average =
      -1;             // the machine's 1-minute load average when calibrate started; < 0: none
  int64_t cores = 0;  // the machine's hardware threads; 0: not recorded
  // The fitted kernel model's residuals against its samples (|model / measured - 1|); < 0: none.
  double kernel_median_error = -1, kernel_max_error = -1;
  // The cores other processes used on average while calibrate measured (executor/timing/
  // foreign_load.h); < 0: not recorded.
  double other_processes_cores = -1;
  // The machine's speed as one small kernel shows it (executor/calibration/calibration.h,
  // kReferenceBlockTokens): that block's median time over calibrate's phases at head dim
  // reference_head_dim; `execute` times the block again and scales the prediction by the ratio.
  // speed_spread: how far the machine's speed moved while its kernels were measured, max / min
  // - 1 of the kernel rounds' time factors (exec::SummarizeSpeed): drift no fit removes.
  // 0, 0 and -1: not recorded.
  double reference_block_s = 0;
  int64_t reference_head_dim = 0;
  double speed_spread = -1;
  // Draws (`calibrate --draws N`): how many calibrations of this machine, each a process of its
  // own, the file combines (each fitted value their median; 0: one calibration, not recorded), and
  // the range their own predictions took around the file's: over a set of probe plans, the median
  // of the lowest draw's time over the file's (draw_low <= 1) and of the highest's (draw_high >= 1)
  // (capacity/draw_range.h). A prediction on the file is one point of [draw_low, draw_high] x
  // itself: how far another calibration of the machine could have put it. 0, 0: no range.
  int64_t draws = 0;
  double draw_low = 0, draw_high = 0;

  bool recorded() const { return load_average >= 0; }
  bool has_reference() const { return reference_block_s > 0 && reference_head_dim > 0; }
  bool has_draw_range() const { return draws > 1 && draw_low > 0 && draw_high > 0; }
  // Where the draws' range reaches further than kSpeedSpreadNote from the file's prediction,
  // what a prediction on it means: a point of that range ("" otherwise).
  std::string DrawCaveat() const;
  // Where the machine's speed moved more than kSpeedSpreadNote while it was calibrated, why a
  // prediction on it holds no closer than that ("" otherwise).
  std::string SpeedCaveat() const;
  // Why a run at `load_now` (the 1-minute load average when it starts) should not trust the
  // prediction: the background load differs from the calibration's by more than
  // max(1, cores / 4) ("" when it does not, or nothing was recorded).
  std::string LoadCaveat(double load_now) const;
};

struct Topology {
  std::string name;
  std::string description;
  // What changed the file, one line per pass that did (`topo from-nccl-tests` adds its own):
  // kept by the TOML reader and writer, so a second pass keeps the first's (key `provenance`).
  std::vector<std::string> provenance;
  std::string source;  // file it was read from, or "built-in"
  GpuSpec gpu;
  std::vector<NetworkLevel> levels;  // innermost first; non-empty
  FrameworkSpec framework;
  CalibrationRecord calibration;

  int64_t num_gpus() const;
  int num_levels() const { return static_cast<int>(levels.size()); }
  // GPUs in one group of `level`.
  int64_t Span(int level) const;
  // Innermost level whose group contains both GPUs; -1 when gpu_a == gpu_b.
  int LevelOf(int64_t gpu_a, int64_t gpu_b) const;
  // Hops a message takes at `level` between the groups of level-1 holding the two GPUs
  // (1 for switches, fat trees and full meshes; ring and torus distance otherwise).
  int64_t Hops(int level, int64_t gpu_a, int64_t gpu_b) const;
  // Whether messages at `level` travel hop by hop between neighbouring units (ring, torus).
  bool HasHopRoutes(int level) const;
  // The rings a hop-routed level's units form: {group_size} for a ring, torus_dims for a torus.
  std::vector<int64_t> RouteDims(int level) const;
  // The route between the units (groups of level-1) holding two GPUs at hop-routed `level`:
  // dimension by dimension, first dimension first, each ring the shorter way round (upwards on a
  // tie). Calls visit(unit, dim, up) for each hop, `unit` being the global index
  // (gpu / Span(level-1)) of the unit the hop leaves. Hops(level, a, b) hops in all, except that a
  // route of 0 hops (the GPUs share a unit, which LevelOf never gives) visits nothing.
  template <class Visit>
  void ForEachHop(int level, int64_t gpu_a, int64_t gpu_b, Visit&& visit) const;
  // Latency of one message between the two GPUs over `level`: the level's latency_us per hop on
  // ring and torus levels (every router on the way adds it), once on switch and fat-tree levels
  // (their figures are end-to-end: one message through the fabric, as the sources quote them).
  double RouteLatencySeconds(int level, int64_t gpu_a, int64_t gpu_b) const;
  // The fabric of `level` that GPU `gpu`'s unit belongs to, or null (the level's own links).
  const LevelFabric* FabricOf(int level, int64_t gpu) const;
  // GPU `gpu`'s port at `level`: per direction, bytes per second, and its message latency
  // (its unit's fabric's, else the level's). On a full-mesh level the port is the GPU's links
  // together: (group_size - 1) x bandwidth_GBps.
  double PortBandwidth(int level, int64_t gpu) const;
  double PortLatencySeconds(int level, int64_t gpu) const;
  // A message between two GPUs over `level` (switch and fat-tree levels): the slower port's
  // bandwidth (min of the two) and the larger latency. The level's own figures without fabrics.
  // On a full-mesh level: the one link joining the two GPUs (bandwidth_GBps).
  double PairBandwidth(int level, int64_t gpu_a, int64_t gpu_b) const;
  // Whether `level` joins its GPUs pairwise (LinkKind::kFullMesh).
  bool IsFullMesh(int level) const { return levels[level].kind == LinkKind::kFullMesh; }
  // Whether some level has units on another fabric ([[level.fabric]]).
  bool HasMixedFabrics() const;
  // Checks ranges and consistency; errors name the key ("level[1].group_size: ...").
  // Values beyond what real hardware does, as notes for people ("level 'ib': 400 GB/s per GPU
  // per direction is faster than an 800 Gb/s NIC ..."): the innermost level above NVLink 5's 900
  // GB/s, an outer one above 100 GB/s (800 Gb/s), the usual slip being Gb/s written as GB/s.
  // None for files whose ranks share devices (calibrated CPU files describe memory copies).
  std::vector<std::string> PlausibilityNotes() const;
  Status Validate() const;
  // Level `level`'s fabrics: names, unit ranges inside the cluster and disjoint, rates in range.
  Status ValidateFabrics(int level) const;
  // Makes `library`'s curve the one every model uses (GpuSpec::attention_kernel). Errors, naming
  // the source: an unknown library, or one this GPU has no curve for (listing those it has).
  Status UseAttentionKernel(std::string_view library);
  // Sets framework.step_overhead_s from milliseconds; out of [0, 10 s] is an error (no key named:
  // callers add theirs).
  Status SetStepOverheadMs(double ms);
  // The GPU has a peak rate for `dtype`; the error names the source and key.
  Status SupportsDType(DType dtype) const;
};

template <class Visit>
void Topology::ForEachHop(int level, int64_t gpu_a, int64_t gpu_b, Visit&& visit) const {
  const int64_t below = level == 0 ? 1 : Span(level - 1);
  const int64_t size = levels[level].group_size;
  const int64_t unit_a = gpu_a / below, unit_b = gpu_b / below;
  const int64_t base = unit_a - unit_a % size;  // first unit of their group at `level`
  int64_t coord = unit_a % size;                // position of the hop's unit in the group
  const int64_t target = unit_b % size;
  int64_t stride = 1;  // coordinate step of one hop along the current dimension
  const std::vector<int64_t> dims = RouteDims(level);
  for (size_t d = 0; d < dims.size(); ++d) {
    const int64_t n = dims[d];
    const int64_t from = (coord / stride) % n, to = (target / stride) % n;
    const int64_t up_steps = ((to - from) % n + n) % n;
    const bool up = up_steps <= n - up_steps;
    const int64_t steps = up ? up_steps : n - up_steps;
    int64_t x = from;
    for (int64_t s = 0; s < steps; ++s) {
      visit(base + coord, static_cast<int>(d), up);
      const int64_t next = up ? (x + 1) % n : (x + n - 1) % n;
      coord += (next - x) * stride;
      x = next;
    }
    stride *= n;
  }
}

}  // namespace meshplan
