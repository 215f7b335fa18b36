// The CPU block kernel's time per unit of what the cost model charges, mask by mask.
//
// The model charges a block its visible pairs plus cut_row_extra_pairs per cut row (a row that
// sees some but not all of the block's keys; core/sequence/mask.h PairCounter,
// GpuSpec::cut_row_extra_pairs), at one rate whatever the mask. This program times the forward
// kernel on one S x S block (every token of a sequence, one head, single-threaded) under each mask
// given and prints the kernel's nanoseconds per visible pair and per charged unit (pairs + c x cut
// rows): a mask whose kernel does work the model does not charge shows up as a higher figure than
// causal's.
//
//   taskset -c 0 build/bench/mask_kernel_bench [--seq 6144] [--head-dim 32] [--cut-row-pairs 51]
//       [--repeat 5] [--chunks N] MASK...
//   (default masks: causal, window:1K, two sampled document masks, documents of 1024 tokens and
//   documents of 1001-1047 tokens, whose starts fall inside key tiles)
//
// --chunks N orders the block's rows (queries and keys alike) as N equal chunks of the sequence
// in the order 0, N-1, 1, N-2, ... (zigzag's for N = 2): the same pairs and cut rows as the
// contiguous block, so a kernel that costs more per charged unit there does work by layout that
// the model does not charge (a zigzag or balanced shard's blocks have such rows).
//
// Best of --repeat runs, wall clock. c defaults to 51, this machine's calibrated value
// (`meshplan calibrate`, topologies written by it carry it as cut_row_extra_pairs).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "core/sequence/mask.h"
#include "executor/kernels/block_kernels.h"

namespace meshplan::exec {
namespace {

struct Options {
  int64_t seq = 6144, head_dim = 32, repeat = 5, chunks = 1;
  double cut_row_pairs = 51;
  std::vector<std::string> masks;
};

// Lengths as a "docs:" file would list them, written to a temporary file the mask parser reads.
std::string DocumentsMask(const std::vector<int64_t>& lengths, const std::string& name) {
  const std::string path = "/tmp/meshplan-mask-kernel-bench-" + name + ".txt";
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return "";
  for (int64_t length : lengths) std::fprintf(f, "%lld\n", static_cast<long long>(length));
  std::fclose(f);
  return "docs:" + path;
}

int Run(const Options& options) {
  const int64_t s = options.seq, d = options.head_dim;
  std::vector<float> q(static_cast<size_t>(s * d)), k(q.size()), v(q.size()), o(q.size());
  std::vector<float> lse(static_cast<size_t>(s));
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (std::vector<float>* t : {&q, &k, &v}) {
    for (float& x : *t) x = dist(gen);
  }
  std::vector<int64_t> positions;
  const int64_t c = options.chunks, chunk = s / c;
  for (int64_t i = 0; i < c; ++i) {
    const int64_t x = i % 2 == 0 ? i / 2 : c - 1 - i / 2;  // 0, c-1, 1, c-2, ...
    for (int64_t t = 0; t < chunk; ++t) positions.push_back(x * chunk + t);
  }
  std::printf("%-58s %10s %8s %5s %10s %8s %12s\n", "mask", "pairs", "cut_rows", "docs", "seconds",
              "ns/pair", "ns/charged");
  for (const std::string& text : options.masks) {
    Result<Mask> parsed = ParseMask(text);
    if (!parsed.ok()) {
      std::fprintf(stderr, "mask_kernel_bench: %s\n", parsed.status().message().c_str());
      return 2;
    }
    Mask mask = *parsed;
    if (Status st = DrawDocuments(&mask, s); !st.ok() || !ValidateMask(mask, s).ok()) {
      std::fprintf(stderr, "mask_kernel_bench: %s does not fit %lld tokens\n", text.c_str(),
                   static_cast<long long>(s));
      return 2;
    }
    const PairCounter counter(mask, s);
    const MaskRule rule(mask);
    const RowsView qv{q.data(), s, d, positions.data()}, kv{k.data(), s, d, positions.data()},
        vv{v.data(), s, d, positions.data()};
    double best = 1e30;
    for (int64_t r = 0; r < options.repeat; ++r) {
      const auto start = std::chrono::steady_clock::now();
      BlockForward(qv, kv, vv, d, 0.125f, rule, MutableRows{o.data(), s, d}, lse.data());
      best = std::min(
          best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    const int64_t pairs = counter.Total(), cut = counter.CutRows(0, s, 0, s);
    const double charged = static_cast<double>(pairs) + options.cut_row_pairs * cut;
    std::printf("%-58s %10lld %8lld %5zu %10.5f %8.3f %12.3f\n", text.c_str(),
                static_cast<long long>(pairs), static_cast<long long>(cut),
                mask.document_lengths.size(), best, best * 1e9 / static_cast<double>(pairs),
                best * 1e9 / charged);
  }
  return 0;
}

}  // namespace
}  // namespace meshplan::exec

int main(int argc, char** argv) {
  meshplan::exec::Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--seq" && has_value) {
      options.seq = std::atoll(argv[++i]);
    } else if (arg == "--head-dim" && has_value) {
      options.head_dim = std::atoll(argv[++i]);
    } else if (arg == "--repeat" && has_value) {
      options.repeat = std::max<int64_t>(1, std::atoll(argv[++i]));
    } else if (arg == "--chunks" && has_value) {
      options.chunks = std::max<int64_t>(1, std::atoll(argv[++i]));
    } else if (arg == "--cut-row-pairs" && has_value) {
      options.cut_row_pairs = std::atof(argv[++i]);
    } else if (!arg.empty() && arg[0] == '-') {
      std::fprintf(stderr, "mask_kernel_bench: unknown flag %s (see the header of the source)\n",
                   arg.c_str());
      return 2;
    } else {
      options.masks.push_back(arg);
    }
  }
  if (options.seq < 64 || options.head_dim < 1 || options.seq % options.chunks != 0) {
    std::fprintf(stderr,
                 "mask_kernel_bench: --seq must be >= 64 and a multiple of --chunks, --head-dim "
                 ">= 1\n");
    return 2;
  }
  if (options.masks.empty()) {
    const int64_t s = options.seq;
    std::vector<int64_t> aligned, unaligned;
    for (int64_t used = 0; used < s;) {  // 1024-token documents, and 1001-1047 token ones
      aligned.push_back(std::min<int64_t>(1024, s - used));
      used += aligned.back();
    }
    for (int64_t used = 0, i = 0; used < s; ++i) {
      unaligned.push_back(std::min<int64_t>(1001 + (i * 23) % 47, s - used));
      used += unaligned.back();
    }
    options.masks = {"causal",
                     "window:1K",
                     "docs-sampled:lognormal:median=1K:sigma=1:seed=1",
                     "docs-sampled:lognormal:median=512:sigma=1:seed=1",
                     meshplan::exec::DocumentsMask(aligned, "aligned"),
                     meshplan::exec::DocumentsMask(unaligned, "unaligned")};
  }
  return meshplan::exec::Run(options);
}
