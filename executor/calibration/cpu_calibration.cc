#include "executor/calibration/cpu_calibration.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <limits>
#include <mutex>
#include <random>
#include <thread>

#include "core/sequence/mask.h"
#include "executor/device/host_kernels.h"
#include "executor/host_allocator.h"
#include "executor/kernels/block_kernels.h"
#include "executor/transport/thread_transport.h"

namespace meshplan::exec {
namespace {

using Seconds = std::chrono::duration<double>;

// Repeats `timed_once`, which runs once and returns the seconds it measured (one untimed run
// first), until at least `min_reps` runs and `min_total_s` measured, at most `max_reps`; the
// median.
template <class F>
double MedianOfRuns(F&& timed_once, int min_reps, int max_reps, double min_total_s) {
  timed_once();
  std::vector<double> times;
  double total = 0;
  while (static_cast<int>(times.size()) < max_reps &&
         (static_cast<int>(times.size()) < min_reps || total < min_total_s)) {
    times.push_back(timed_once());
    total += times.back();
  }
  return Median(times);
}

// MedianOfRuns of `once`'s wall time.
template <class F>
double MedianSeconds(F&& once, int min_reps, int max_reps, double min_total_s) {
  return MedianOfRuns(
      [&] {
        const auto start = Clock::now();
        once();
        return Seconds(Clock::now() - start).count();
      },
      min_reps, max_reps, min_total_s);
}

std::vector<float> RandomValues(size_t count, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(count);
  for (float& x : v) x = dist(gen);
  return v;
}

// One piece's inputs and outputs in the device engine's layout ([rows][heads][dim]: a head's rows
// are heads x dim floats apart), computed through the engine's own host entry points
// (HostBlockForward, HostBlockBackward), so that a sample times what a run's compute op runs:
// each head's strided rows, the partial output and its merge into the accumulator.
struct Block {
  Block(BlockPiece piece, int64_t n, int64_t d, int64_t heads)
      : n(n),
        d(d),
        heads(heads),
        mask(piece == BlockPiece::kFull ? Mask::Full() : Mask::Causal()),
        rule(mask) {
    const size_t size = static_cast<size_t>(n * d * heads);
    q = RandomValues(size, 1);
    k = RandomValues(size, 2);
    v = RandomValues(size, 3);
    d_o = RandomValues(size, 4);
    o.assign(size, 0.0f);
    dq.assign(size, 0.0f);
    dk.assign(size, 0.0f);
    dv.assign(size, 0.0f);
    lse.assign(static_cast<size_t>(n * heads), -std::numeric_limits<float>::infinity());
    delta.assign(static_cast<size_t>(n * heads), 0.0f);
    PiecePositions(piece, n, &q_pos, &k_pos);
  }
  // A [n][heads][dim] view of m (dim 1 for LSE and D), with token positions for the inputs.
  TensorView View(std::vector<float>& m, const std::vector<int64_t>* positions = nullptr) {
    TensorView t;
    t.data = m.data();
    t.rows = n;
    t.head_begin = 0;
    t.heads = static_cast<int32_t>(heads);
    if (positions != nullptr) t.positions = t.host_positions = positions->data();
    return t;
  }
  BlockProblem Problem() const {
    BlockProblem p;
    p.type = InputType::kFp32;
    p.batch = 1;
    p.dim = static_cast<int32_t>(d);
    p.scale = 1.0f / std::sqrt(static_cast<float>(d));
    p.head_begin = 0;
    p.head_count = static_cast<int32_t>(heads);
    p.group_size = 1;
    return p;
  }

  void Forward() {
    HostBlockForward(Problem(), rule, View(q, &q_pos), View(k, &k_pos), View(v, &k_pos), View(o),
                     View(lse));
  }
  // With the forward's lse, and delta = rowsum(dO * O), as a run has them.
  void PrepareBackward() {
    Forward();
    for (int64_t i = 0; i < n * heads; ++i) {  // row i of (token, head) pairs
      float sum = 0;
      for (int64_t c = 0; c < d; ++c) sum += d_o[i * d + c] * o[i * d + c];
      delta[i] = sum;
    }
  }
  void Backward() {
    HostBlockBackward(Problem(), rule, View(q, &q_pos), View(k, &k_pos), View(v, &k_pos),
                      View(d_o, &q_pos), View(lse), View(delta), View(dq), View(dk), View(dv));
  }

  int64_t n, d, heads;
  Mask mask;
  MaskRule rule;
  std::vector<float> q, k, v, d_o, o, dq, dk, dv, lse, delta;
  std::vector<int64_t> q_pos, k_pos;
};

// Memory for `count` floats, refused beyond a bound so a bad size cannot exhaust the machine.
Status CheckFloats(double count, const std::string& what) {
  constexpr double kMaxFloats = 1 << 28;  // 1 GiB
  if (count > kMaxFloats)
    return Status::Invalid("calibrate: " + what + " would need more than 1 GiB");
  return Status::Ok();
}

// Blocks each thread of a several-rank sample computes back to back: enough for
// kMinRankWorkSeconds (half in quick mode) of work alone, at most kMaxInnerRepeats.
constexpr double kMinRankWorkSeconds = 0.04;
constexpr int kMaxInnerRepeats = 512;
int InnerRepeats(double block_alone_s, bool quick) {
  const double target = quick ? kMinRankWorkSeconds / 2 : kMinRankWorkSeconds;
  if (!(block_alone_s > 0)) return kMaxInnerRepeats;
  return static_cast<int>(
      std::clamp(std::ceil(target / block_alone_s), 1.0, static_cast<double>(kMaxInnerRepeats)));
}

// The calling thread's CPU time (the time its cores ran it), in seconds.
double ThreadCpuSeconds() {
  timespec t{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0) return 0;
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// What RunAtOnce measured: per rank, its end (seconds from the release) and the CPU time its
// work took.
struct RanksAtOnce {
  std::vector<double> ends_s;
  std::vector<double> cpu_s;
};

// Starts work(r) on `ranks` threads at once (all released together once every thread is up).
template <class F>
RanksAtOnce RunAtOnce(int ranks, F&& work) {
  // The threads sleep (not spin) until the release: threads that spun until then had used
  // different shares of the cores by the start, and the scheduler then ran some of them ahead of
  // the others, which made equal kernels end up to 50% apart in some calibrations and turned
  // the sharing verdict from processor to serial at random.
  std::vector<double> ends(static_cast<size_t>(ranks), 0.0), cpu(static_cast<size_t>(ranks), 0.0);
  std::mutex mutex;
  std::condition_variable changed;
  int ready = 0;
  bool go = false;
  Clock::time_point start;
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      {
        std::unique_lock<std::mutex> lock(mutex);
        ++ready;
        changed.notify_all();
        changed.wait(lock, [&] { return go; });
      }
      const double cpu_start = ThreadCpuSeconds();
      work(r);
      ends[r] = Seconds(Clock::now() - start).count();
      cpu[r] = ThreadCpuSeconds() - cpu_start;
    });
  }
  {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return ready == ranks; });
    start = Clock::now();
    go = true;
  }
  changed.notify_all();
  for (std::thread& t : threads) t.join();
  return {std::move(ends), std::move(cpu)};
}

}  // namespace

CpuCalibrationTarget::CpuCalibrationTarget(int64_t head_dim, int64_t heads, bool quick)
    : d_(head_dim), heads_(heads), quick_(quick) {
  KeepFreedHostMemoryMapped();  // measure with the allocator a host execute runs with
}

Result<double> CpuCalibrationTarget::ReferenceBlockSeconds() {
  constexpr int kReferenceReps = 15, kMaxReferenceReps = 200;
  constexpr double kReferenceSeconds = 0.1;
  Block block(BlockPiece::kFull, kReferenceBlockTokens, d_, 1);
  return MedianSeconds([&] { block.Forward(); }, kReferenceReps, kMaxReferenceReps,
                       kReferenceSeconds);
}

Result<double> CpuCalibrationTarget::KernelSeconds(BlockPiece piece, int64_t n, int64_t heads,
                                                   bool backward, int ranks) {
  // The block's inputs and outputs, and each rank's scratch: n x n scores for a dense block, and
  // as many again for the backward's dS.
  const double scratch = (backward ? 2.0 : 1.0) * static_cast<double>(n) * static_cast<double>(n);
  MESHPLAN_RETURN_IF_ERROR(
      CheckFloats((11.0 * static_cast<double>(n * d_ * heads) + scratch) * ranks, "the blocks"));
  std::vector<std::unique_ptr<Block>> blocks;
  for (int r = 0; r < ranks; ++r) {
    blocks.push_back(std::make_unique<Block>(piece, n, d_, heads));
    if (backward) blocks.back()->PrepareBackward();
  }
  const bool large = n > kAllPiecesTokens;
  const int min_reps = large ? 1 : quick_ ? 2 : 3, max_reps = quick_ ? 7 : 15;
  const double min_total_s = quick_ ? 0.05 : 0.2;
  auto run = [&](Block& b) { backward ? b.Backward() : b.Forward(); };
  if (ranks == 1) return MedianSeconds([&] { run(*blocks[0]); }, min_reps, max_reps, min_total_s);
  // Several ranks at once: each thread computes the block `inner` times back to back, as a rank
  // computes its blocks in a run, for at least kMinRankWorkSeconds. One block per thread timed the
  // threads' release and the scheduler's time slices with it: on this 2-core VM, 4 ranks gave
  // 128- and 512-token one-head blocks 0.45 and 0.73 of the peak, where one rank alone ran them
  // at 0.99 and 1.0, and plans ran 12-20% faster than predicted (docs/fidelity.md).
  const auto alone_start = Clock::now();
  run(*blocks[0]);
  const double alone_s = Seconds(Clock::now() - alone_start).count();
  const int inner = InnerRepeats(alone_s, quick_);
  // Each repetition's time is the threads' CPU time over the cores they can use: their work at
  // full rate, as sharing the caches and memory slowed it, spread over every core. Not their last
  // end: with more ranks than cores the scheduler leaves one thread behind in some runs (3 on 2
  // cores: ends 1.33, 1.33, 1.67 alone-times against the fair 1.5), a lag that calibrate measures
  // and plans are charged once (sharing_end_lag_s); timed into the kernels too, it made the
  // 3-rank calibrations' kernels up to 11% slow at random. Nor their median end: in a short run
  // the scheduler left a core idle for up to 20 ms after a thread alone on it ended (3 threads of
  // 20 ms each ended at 20, 40 and 40 ms, not 20, 30 and 30), which read 128- and 512-token
  // blocks 15-20% slow at 3 ranks and not at 6 (SpreadWorkSeconds).
  const int processors = Processors();
  const double fair_end_s = MedianOfRuns(
      [&] {
        const RanksAtOnce at_once = RunAtOnce(ranks, [&](int r) {
          for (int i = 0; i < inner; ++i) run(*blocks[r]);
        });
        return SpreadWorkSeconds(at_once.ends_s, at_once.cpu_s, processors);
      },
      min_reps, max_reps, min_total_s);
  return fair_end_s / inner;
}

Result<double> CpuCalibrationTarget::MergeSeconds(int64_t n) {
  MESHPLAN_RETURN_IF_ERROR(
      CheckFloats(4.0 * static_cast<double>(n * (d_ + 1) * heads_), "a merge"));
  const size_t rows = static_cast<size_t>(n * heads_);
  std::vector<float> o = RandomValues(rows * d_, 5), o_in = RandomValues(rows * d_, 6);
  std::vector<float> lse(rows, 0.5f), lse_in(rows, 0.25f);
  const std::vector<float> lse_start = lse;
  return MedianSeconds(
      [&] {
        lse = lse_start;  // keep the accumulator's scale from drifting over repetitions
        MergePartial(MutableRows{o.data(), static_cast<int64_t>(rows), d_}, lse.data(), o_in.data(),
                     d_, lse_in.data(), d_);
      },
      quick_ ? 3 : 5, 50, quick_ ? 0.02 : 0.1);
}

Result<std::vector<double>> CpuCalibrationTarget::ConcurrentEndsSeconds(int ranks, int64_t n,
                                                                        int repeats) {
  MESHPLAN_RETURN_IF_ERROR(CheckFloats(11.0 * static_cast<double>(n * d_ * heads_) * ranks,
                                       std::to_string(ranks) + " blocks"));
  std::vector<std::unique_ptr<Block>> blocks;
  for (int r = 0; r < ranks; ++r) {
    blocks.push_back(std::make_unique<Block>(BlockPiece::kFull, n, d_, heads_));
    blocks.back()->Forward();  // warm: pages touched, caches as in a run
  }
  return RunAtOnce(ranks,
                   [&](int r) {
                     for (int i = 0; i < repeats; ++i) blocks[r]->Forward();
                   })
      .ends_s;
}

int CpuCalibrationTarget::Processors() const {
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

Result<double> CpuCalibrationTarget::MessageSeconds(int64_t bytes) {
  const size_t floats = static_cast<size_t>(std::max<int64_t>(1, bytes / 4));
  MESHPLAN_RETURN_IF_ERROR(CheckFloats(4.0 * static_cast<double>(floats), "a message"));
  auto fabric = std::make_shared<ThreadFabric>(2);
  const std::vector<float> source = RandomValues(floats, 7);
  std::vector<float> sink_a(floats), sink_b(floats);
  const int reps = bytes >= (1 << 20) ? (quick_ ? 5 : 9) : (quick_ ? 21 : 51);
  Status peer_status;
  // The peer answers every message with one of the same size (ping-pong).
  std::thread peer([&] {
    for (int i = 0; i < reps + 1; ++i) {
      std::vector<float> in;
      Status s = fabric->Take(0, 1, i, &in, Clock::now() + std::chrono::seconds(30));
      if (!s.ok()) {
        peer_status = s;
        return;
      }
      std::copy(in.begin(), in.end(), sink_b.begin());
      std::vector<float> out(sink_b.begin(), sink_b.end());
      s = fabric->Deliver(1, 0, i, out);
      if (!s.ok()) {
        peer_status = s;
        return;
      }
    }
  });
  std::vector<double> one_way;
  Status status;
  for (int i = 0; i < reps + 1 && status.ok(); ++i) {
    const auto t0 = Clock::now();
    std::vector<float> out(source.begin(), source.end());
    status = fabric->Deliver(0, 1, i, out);
    std::vector<float> in;
    if (status.ok()) status = fabric->Take(1, 0, i, &in, Clock::now() + std::chrono::seconds(30));
    if (status.ok()) std::copy(in.begin(), in.end(), sink_a.begin());
    if (i > 0)
      one_way.push_back(0.5 * Seconds(Clock::now() - t0).count());  // the first is a warm-up
  }
  if (!status.ok()) fabric->Abort(status.message());
  peer.join();
  MESHPLAN_RETURN_IF_ERROR(status);
  MESHPLAN_RETURN_IF_ERROR(peer_status);
  return Median(one_way);
}

Result<double> CpuCalibrationTarget::KernelSecondsAtHeadDim(int64_t head_dim, int64_t n,
                                                            int64_t heads) {
  CpuCalibrationTarget other(head_dim, heads_, quick_);
  return other.KernelSeconds(BlockPiece::kFull, n, heads, /*backward=*/false, 1);
}

std::string CpuCalibrationTarget::DeviceModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model = "CPU";
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) model = line.substr(line.find_first_not_of(" \t", colon + 1));
      break;
    }
  }
  const unsigned threads = std::thread::hardware_concurrency();
  if (threads > 0) model += " (" + std::to_string(threads) + " hardware threads)";
  return model;
}

double CpuCalibrationTarget::LoadAverage() {
  double load[1] = {0};
  return getloadavg(load, 1) == 1 ? load[0] : -1.0;
}

double CpuCalibrationTarget::PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0.0;
}

}  // namespace meshplan::exec
