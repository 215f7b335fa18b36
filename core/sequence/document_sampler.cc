#include "core/sequence/document_sampler.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <numbers>
#include <optional>

#include "core/base/escape.h"
#include "core/base/units.h"
#include "core/sequence/mask.h"

namespace meshplan {
namespace {

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;

// splitmix64 (Steele, Lea and Flood 2014): a stream of 64-bit words from a seed, the same on
// every platform (std::*_distribution are not specified bit for bit, so they are not used).
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += kGolden);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in (0, 1): 53 random bits, offset by half a step so that log() never sees 0.
  double Unit() { return (static_cast<double>(Next() >> 11) + 0.5) * 0x1.0p-53; }
  // Uniform integer in [0, n), n >= 1 (the modulo bias is below n / 2^64).
  uint64_t Below(uint64_t n) { return Next() % n; }

 private:
  uint64_t state_;
};

Status KeyError(std::string_view key, const std::string& why) {
  return Status::Invalid("docs-sampled " + std::string(key) + ": " + why);
}

Result<double> ParseReal(std::string_view key, const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value)) {
    return KeyError(key, "expected a number, got " + QuoteInput(text));
  }
  return value;
}

Result<uint64_t> ParseSeed(const std::string& text) {
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
    return KeyError("seed", "expected an integer from 0 to 2^64-1, got " + QuoteInput(text));
  }
  return value;
}

// One draw of a document length, at least 1 token and at most `cap`.
int64_t Draw(const DocumentSampler& s, SplitMix64& rng, int64_t cap) {
  double length = 1;
  switch (s.distribution) {
    case DocumentSampler::Distribution::kLogNormal: {
      const double u1 = rng.Unit(), u2 = rng.Unit();
      const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
      length = std::round(s.median_tokens * std::exp(s.sigma * z));
      break;
    }
    case DocumentSampler::Distribution::kUniform:
      length =
          static_cast<double>(s.min_tokens) +
          static_cast<double>(rng.Below(static_cast<uint64_t>(s.max_tokens - s.min_tokens + 1)));
      break;
    case DocumentSampler::Distribution::kEmpirical:
      length = static_cast<double>(s.empirical_lengths[rng.Below(s.empirical_lengths.size())]);
      break;
  }
  if (!(length >= 1)) return 1;
  return length >= static_cast<double>(cap) ? cap : static_cast<int64_t>(length);
}

}  // namespace

Result<DocumentSampler> ParseDocumentSampler(std::string_view spec) {
  DocumentSampler s;
  s.spec = std::string(spec);
  const size_t colon = spec.find(':');
  const std::string_view dist = spec.substr(0, colon);
  std::string_view rest =
      colon == std::string_view::npos ? std::string_view() : spec.substr(colon + 1);
  std::map<std::string, std::string, std::less<>> keys;
  while (!rest.empty()) {
    std::string_view item = rest;
    if (rest.rfind("file=", 0) == 0) {
      rest = {};  // file= takes the rest: a path may contain ':'
    } else {
      const size_t next = rest.find(':');
      item = rest.substr(0, next);
      rest = next == std::string_view::npos ? std::string_view() : rest.substr(next + 1);
    }
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return Status::Invalid("docs-sampled: expected KEY=VALUE, got " + QuoteInput(item));
    }
    const std::string key(item.substr(0, eq));
    if (keys.count(key)) return KeyError(key, "given twice");
    keys[key] = std::string(item.substr(eq + 1));
  }
  auto take = [&](const char* key) -> std::optional<std::string> {
    auto it = keys.find(key);
    if (it == keys.end()) return std::nullopt;
    std::string value = it->second;
    keys.erase(it);
    return value;
  };
  auto count = [&](const char* key, int64_t* out) -> Status {
    auto text = take(key);
    if (!text) return KeyError(key, "missing (" + std::string(dist) + " needs it)");
    auto value = ParseCount(*text);
    if (!value.ok()) return value.status().WithContext("docs-sampled " + std::string(key));
    *out = *value;
    return Status::Ok();
  };
  if (auto seed = take("seed")) {
    MESHPLAN_ASSIGN_OR_RETURN(auto value, ParseSeed(*seed));
    s.seed = value;
  }
  if (auto align = take("align")) {
    auto value = ParseCount(*align);
    if (!value.ok()) return value.status().WithContext("docs-sampled align");
    if (*value < 1 || *value > (int64_t{1} << 30))
      return KeyError("align", "must be from 1 to 2^30 tokens, got " + QuoteInput(*align));
    s.align_tokens = *value;
  }
  if (dist == "lognormal") {
    s.distribution = DocumentSampler::Distribution::kLogNormal;
    int64_t median = 0;
    MESHPLAN_RETURN_IF_ERROR(count("median", &median));
    s.median_tokens = static_cast<double>(median);
    if (auto sigma = take("sigma")) {
      MESHPLAN_ASSIGN_OR_RETURN(auto value, ParseReal("sigma", *sigma));
      if (value < 0 || value > 8)
        return KeyError("sigma", "must be between 0 and 8, got " + *sigma);
      s.sigma = value;
    }
  } else if (dist == "uniform") {
    s.distribution = DocumentSampler::Distribution::kUniform;
    MESHPLAN_RETURN_IF_ERROR(count("min", &s.min_tokens));
    MESHPLAN_RETURN_IF_ERROR(count("max", &s.max_tokens));
    if (s.max_tokens < s.min_tokens) {
      return KeyError("max", "must be at least min (" + std::to_string(s.min_tokens) + "), got " +
                                 std::to_string(s.max_tokens));
    }
  } else if (dist == "empirical") {
    s.distribution = DocumentSampler::Distribution::kEmpirical;
    auto file = take("file");
    if (!file || file->empty())
      return KeyError("file", "missing (empirical needs a file of lengths)");
    auto lengths = ReadDocumentLengths(*file);
    if (!lengths.ok()) return lengths.status();
    for (int64_t length : *lengths) {
      if (length < 1) return Status::Invalid(*file + ": document lengths must be positive");
    }
    s.empirical_lengths = std::move(lengths).value();
  } else {
    return Status::Invalid("docs-sampled: unknown distribution " + QuoteInput(dist) +
                           " (expected lognormal, uniform or empirical)");
  }
  if (!keys.empty()) {
    return KeyError(keys.begin()->first, "unknown key for " + std::string(dist));
  }
  return s;
}

Result<std::vector<int64_t>> SampleDocumentLengths(const DocumentSampler& sampler,
                                                   int64_t seq_len) {
  if (seq_len < 1) return Status::Invalid("documents need a sequence of at least 1 token");
  const int64_t align = std::max<int64_t>(1, sampler.align_tokens);
  if (seq_len % align != 0) {
    const int64_t below = seq_len / align * align;
    return Status::Invalid(
        "docs-sampled " + QuoteInput(sampler.spec) + ": align=" + std::to_string(align) +
        " needs the sequence length a multiple of " + std::to_string(align) + ", and " +
        std::to_string(seq_len) + " is not (nearest: " +
        (below > 0 ? std::to_string(below) + " and " : "") + std::to_string(below + align) + ")");
  }
  SplitMix64 rng(sampler.seed);
  std::vector<int64_t> lengths;
  int64_t left = seq_len;
  while (left > 0) {
    if (static_cast<int64_t>(lengths.size()) == kMaxSampledDocuments) {
      return Status::Invalid("docs-sampled " + QuoteInput(sampler.spec) + ": " +
                             std::to_string(seq_len) + " tokens would hold more than " +
                             std::to_string(kMaxSampledDocuments) +
                             " documents; use longer documents");
    }
    // left stays a multiple of align, so the cap keeps a rounded-up draw aligned.
    const int64_t drawn = Draw(sampler, rng, left);
    const int64_t length = std::min(left, (drawn + align - 1) / align * align);
    lengths.push_back(length);
    left -= length;
  }
  return lengths;
}

}  // namespace meshplan
