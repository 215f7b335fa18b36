// Document lengths drawn from a distribution, for packed-sequence masks that scale with the
// sequence length (mask "docs-sampled:SPEC"): a sweep over --seq draws new documents at each
// length instead of refusing a fixed file of lengths. LongCA-bench packs documents sampled from a
// dataset's length distribution the same way; `empirical:file=...` takes such a distribution.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"

namespace meshplan {

// Most documents one sampled sequence may hold: the mask's pair counts cost O(log D) per query
// range, and a distribution of 1-token documents at 2^30 tokens would need 8 GiB of lengths.
inline constexpr int64_t kMaxSampledDocuments = int64_t{1} << 20;

struct DocumentSampler {
  enum class Distribution { kLogNormal, kUniform, kEmpirical };
  Distribution distribution = Distribution::kLogNormal;
  double median_tokens = 0;  // log-normal: exp(mu), the median length
  double sigma = 1.0;        // log-normal: standard deviation of log(length)
  int64_t min_tokens = 0;    // uniform: lengths in [min_tokens, max_tokens], each equally likely
  int64_t max_tokens = 0;
  std::vector<int64_t>
      empirical_lengths;  // empirical: each entry equally likely (repeat to weight)
  uint64_t seed = 1;
  // Every length rounded up to a multiple of this (the last one cut to what is left, itself a
  // multiple): documents padded as a THD data pipeline pads them for context parallelism (2 x CP,
  // x TP with sequence parallelism), so the doc-zigzag layout can split each one.
  int64_t align_tokens = 1;
  std::string spec;  // the text it was parsed from, for display and plan files
};

// Parses DIST[:KEY=VALUE]... with
//   lognormal:median=N[:sigma=X]   (sigma defaults to 1; 0 <= sigma <= 8)
//   uniform:min=N:max=N
//   empirical:file=PATH            (a file of lengths as for "docs:FILE"; file= must come last,
//                                   so PATH may contain ':')
// and any of them with :seed=N (default 1) and :align=N (default 1: every length rounded up to a
// multiple of N). Counts take K/M/G suffixes (8K = 8192).
// Errors name the key and the reason.
Result<DocumentSampler> ParseDocumentSampler(std::string_view spec);

// Packs documents drawn in order from the sampler's deterministic stream (splitmix64 from the
// seed; log-normal by Box-Muller) until they cover seq_len tokens; the last document is cut to
// what is left, so the lengths sum to seq_len exactly. A draw is at least 1 token. The same seed
// and seq_len give the same lengths on one platform (libm's exp/log/cos may differ in the last
// bit elsewhere, which can move a rounded length by one; plan files store the lengths drawn).
// With align_tokens > 1 each draw is rounded up to a multiple of it, so seq_len must be one.
// Errors: seq_len < 1, seq_len not a multiple of align_tokens, or more than kMaxSampledDocuments
// documents.
Result<std::vector<int64_t>> SampleDocumentLengths(const DocumentSampler& sampler, int64_t seq_len);

}  // namespace meshplan
