#include "core/sequence/mask.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <sstream>

#include "core/base/checked_math.h"
#include "core/base/escape.h"
#include "core/base/toml_util.h"
#include "core/base/units.h"

namespace meshplan {
namespace {

// Sum over q in [q0, q1) of max(q - c, 0), exact. Uses T(x) = x(x+1)/2 for x > 0.
int64_t RampSum(int64_t q0, int64_t q1, int64_t c) {
  auto tri = [](int64_t x) { return x > 0 ? x * (x + 1) / 2 : 0; };
  if (q1 <= q0) return 0;
  return tri(q1 - 1 - c) - tri(q0 - 1 - c);
}

}  // namespace

Mask Mask::Documents(std::vector<int64_t> lengths, bool bidirectional) {
  Mask m;
  m.kind = bidirectional ? MaskKind::kDocumentsFull : MaskKind::kDocuments;
  m.document_lengths = std::move(lengths);
  return m;
}

Mask Mask::Prefix(int64_t n) {
  Mask m;
  m.kind = MaskKind::kPrefix;
  m.prefix = n;
  return m;
}

std::string Mask::ToString() const {
  switch (kind) {
    case MaskKind::kFull:
      return "full";
    case MaskKind::kCausal:
      return "causal";
    case MaskKind::kWindow:
      return "window:" + FormatCount(window);
    case MaskKind::kPrefix:
      return "prefix:" + FormatCount(prefix);
    case MaskKind::kDocuments:
    case MaskKind::kDocumentsFull: {
      const std::string name = kind == MaskKind::kDocuments ? "docs" : "docs-full";
      if (sampler) return name + "-sampled:" + sampler->spec;
      if (!documents_source.empty()) return name + ":" + documents_source;
      return name + ":" + std::to_string(document_lengths.size()) + " documents";
    }
  }
  return "causal";
}

Result<std::vector<int64_t>> ReadDocumentLengths(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    return Status::Invalid(path + ": is a directory, expected a file of document lengths");
  }
  MESHPLAN_ASSIGN_OR_RETURN(auto text, ReadTextFile(path));
  return ParseDocumentLengths(text, path);
}

Result<std::vector<int64_t>> ParseDocumentLengths(std::string_view text,
                                                  const std::string& source) {
  std::vector<int64_t> lengths;
  std::istringstream in{std::string(text)};
  std::string line;
  int64_t line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::replace(line.begin(), line.end(), ',', ' ');
    std::istringstream words(line);
    std::string word;
    while (words >> word) {
      auto value = ParseCount(word);
      if (!value.ok()) {
        return Status::Invalid(source + ":" + std::to_string(line_number) +
                               ": document length: " + value.status().message());
      }
      lengths.push_back(*value);
    }
  }
  if (lengths.empty()) return Status::Invalid(source + ": no document lengths found");
  return lengths;
}

Result<Mask> ParseMask(std::string_view text) {
  if (text == "full") return Mask::Full();
  if (text == "causal") return Mask::Causal();
  if (text.rfind("window:", 0) == 0) {
    auto w = ParseCount(text.substr(7));
    if (!w.ok()) return w.status().WithContext("mask window");
    return Mask::Window(*w);
  }
  if (text.rfind("prefix:", 0) == 0) {
    auto n = ParseCount(text.substr(7));
    if (!n.ok()) return n.status().WithContext("mask prefix");
    return Mask::Prefix(*n);
  }
  for (const bool bidirectional : {false, true}) {
    const std::string name = bidirectional ? "docs-full" : "docs";
    if (text.rfind(name + "-sampled:", 0) == 0) {
      auto sampler = ParseDocumentSampler(text.substr(name.size() + 9));
      if (!sampler.ok()) return sampler.status();
      Mask m = Mask::Documents({}, bidirectional);
      m.sampler = std::move(sampler).value();
      return m;
    }
    if (text.rfind(name + ":", 0) == 0) {
      std::string path(text.substr(name.size() + 1));
      if (path.empty())
        return Status::Invalid("mask '" + name + ":' needs a file of document lengths");
      MESHPLAN_ASSIGN_OR_RETURN(auto lengths, ReadDocumentLengths(path));
      Mask m = Mask::Documents(std::move(lengths), bidirectional);
      m.documents_source = path;
      return m;
    }
  }
  return Status::Invalid("unknown mask " + QuoteInput(text) +
                         " (expected full, causal, window:W, prefix:N, docs:FILE, docs-full:FILE, "
                         "docs-sampled:SPEC or docs-full-sampled:SPEC)");
}

Status DrawDocuments(Mask* mask, int64_t seq_len) {
  if (!mask->sampler) return Status::Ok();
  int64_t drawn = 0;
  for (int64_t length : mask->document_lengths) drawn += length;
  if (drawn == seq_len && !mask->document_lengths.empty()) return Status::Ok();  // already drawn
  MESHPLAN_ASSIGN_OR_RETURN(auto lengths, SampleDocumentLengths(*mask->sampler, seq_len));
  mask->document_lengths = std::move(lengths);
  return Status::Ok();
}

Status ValidateMask(const Mask& mask, int64_t seq_len) {
  if (mask.kind == MaskKind::kWindow && mask.window < 1) {
    return Status::Invalid("mask window must be at least 1 token");
  }
  if (mask.kind == MaskKind::kPrefix && (mask.prefix < 1 || mask.prefix > seq_len)) {
    return Status::Invalid("mask prefix must be from 1 to the sequence length (" +
                           std::to_string(seq_len) + ") tokens, got " +
                           std::to_string(mask.prefix));
  }
  if (mask.IsDocuments()) {
    if (mask.sampler && mask.document_lengths.empty()) {
      return Status::Internal("the sampled documents of " + QuoteInput(mask.ToString()) +
                              " were not drawn for the sequence length (DrawDocuments)");
    }
    const std::string where =
        mask.documents_source.empty() ? std::string() : " in " + QuoteInput(mask.documents_source);
    // Checked: lengths whose int64 sum wraps around could otherwise add up to seq_len.
    int64_t sum = 0;
    for (int64_t length : mask.document_lengths) {
      if (length <= 0) return Status::Invalid("document lengths must be positive");
      const std::optional<int64_t> next = CheckedAdd(sum, length);
      if (!next) {
        return Status::Invalid("document lengths" + where +
                               " sum to more than 2^63 - 1 tokens, but the sequence has " +
                               std::to_string(seq_len));
      }
      sum = *next;
    }
    if (sum != seq_len) {
      return Status::Invalid("document lengths" + where + " sum to " + std::to_string(sum) +
                             " tokens, but the sequence has " + std::to_string(seq_len));
    }
  }
  return Status::Ok();
}

PairCounter::PairCounter(const Mask& mask, int64_t seq_len) : mask_(mask), seq_len_(seq_len) {
  if (mask.IsDocuments()) {
    doc_starts_.reserve(mask.document_lengths.size() + 1);
    int64_t start = 0;
    for (int64_t length : mask.document_lengths) {
      doc_starts_.push_back(start);
      start += length;
    }
    doc_starts_.push_back(start);
  }
}

// Pairs with k <= q in the rectangle: sum over q of clamp(q + 1 - k0, 0, k1 - k0), written as
// max(q-(k0-1),0) - max(q-(k1-1),0) summed in closed form.
int64_t PairCounter::CausalCount(int64_t q0, int64_t q1, int64_t k0, int64_t k1) const {
  if (q1 <= q0 || k1 <= k0) return 0;
  return RampSum(q0, q1, k0 - 1) - RampSum(q0, q1, k1 - 1);
}

int64_t PairCounter::Count(int64_t q0, int64_t q1, int64_t k0, int64_t k1) const {
  if (q1 <= q0 || k1 <= k0) return 0;
  switch (mask_.kind) {
    case MaskKind::kFull:
      return (q1 - q0) * (k1 - k0);
    case MaskKind::kCausal:
      return CausalCount(q0, q1, k0, k1);
    case MaskKind::kWindow: {
      // Allowed k in [q - W + 1, q]: the causal count minus the pairs with k <= q - W,
      // i.e. the causal count of the key range shifted right by W.
      // A window of seq_len or more allows every causal pair; clamping it keeps k + w in range.
      const int64_t w = std::min(mask_.window, seq_len_);
      return CausalCount(q0, q1, k0, k1) - CausalCount(q0, q1, k0 + w, k1 + w);
    }
    case MaskKind::kPrefix: {
      // k <= max(q, N - 1): queries before N - 1 see exactly the keys below N, the rest are causal.
      const int64_t last_prefix_query = std::min(q1, mask_.prefix - 1);
      const int64_t prefix_rows = std::max<int64_t>(0, last_prefix_query - q0);
      const int64_t prefix_keys = std::max<int64_t>(0, std::min(k1, mask_.prefix) - k0);
      return prefix_rows * prefix_keys + CausalCount(std::max(q0, mask_.prefix - 1), q1, k0, k1);
    }
    case MaskKind::kDocuments:
    case MaskKind::kDocumentsFull: {
      // Only documents overlapping both ranges contribute, each with its causal part (or, for
      // bidirectional documents, its whole rectangle).
      auto first_doc = [&](int64_t token) {  // index of the document containing token
        return static_cast<int64_t>(
                   std::upper_bound(doc_starts_.begin(), doc_starts_.end(), token) -
                   doc_starts_.begin()) -
               1;
      };
      int64_t d_begin = std::max(first_doc(q0), first_doc(k0));
      int64_t d_end = std::min(first_doc(q1 - 1), first_doc(k1 - 1));
      int64_t total = 0;
      for (int64_t d = d_begin; d <= d_end; ++d) {
        const int64_t s = doc_starts_[d], e = doc_starts_[d + 1];
        const int64_t qa = std::max(q0, s), qb = std::min(q1, e), ka = std::max(k0, s),
                      kb = std::min(k1, e);
        total += mask_.kind == MaskKind::kDocuments ? CausalCount(qa, qb, ka, kb)
                                                    : (qb - qa) * (kb - ka);
      }
      return total;
    }
  }
  return 0;
}

namespace {
// Length of [a0, a1) n [b0, b1).
int64_t Overlap(int64_t a0, int64_t a1, int64_t b0, int64_t b1) {
  return std::max<int64_t>(0, std::min(a1, b1) - std::max(a0, b0));
}
}  // namespace

// Every mask here shows a row q a contiguous run of keys [lo(q), hi(q)] (within the rectangle:
// clipped to [k0, k1)); the row is cut when the clipped run is neither empty nor all C = k1 - k0
// keys. Each case counts the rows whose run is non-empty minus those whose run is every key.
int64_t PairCounter::CutRows(int64_t q0, int64_t q1, int64_t k0, int64_t k1) const {
  if (q1 <= q0 || k1 <= k0) return 0;
  switch (mask_.kind) {
    case MaskKind::kFull:
      return 0;
    case MaskKind::kCausal:
      // Keys [k0, q]: some iff q >= k0, all iff q >= k1 - 1.
      return Overlap(q0, q1, k0, k1 - 1);
    case MaskKind::kWindow: {
      // Keys [q - w + 1, q]: some iff k0 <= q < k1 - 1 + w; all iff k1 - 1 <= q < k0 + w.
      const int64_t w = std::min(mask_.window, seq_len_);
      return Overlap(q0, q1, k0, k1 - 1 + w) - Overlap(q0, q1, k1 - 1, k0 + w);
    }
    case MaskKind::kPrefix: {
      // Keys [0, max(q, N - 1)]: rows below N - 1 all see [0, N - 1] (cut iff k0 <= N - 1 < k1 -
      // 1), the rest are causal.
      const int64_t n1 = mask_.prefix - 1;
      const int64_t prefix_rows = std::max<int64_t>(0, std::min(q1, n1) - q0);
      const int64_t cut_prefix = n1 >= k0 && n1 < k1 - 1 ? prefix_rows : 0;
      return cut_prefix + Overlap(std::max(q0, n1), q1, k0, k1 - 1);
    }
    case MaskKind::kDocuments:
    case MaskKind::kDocumentsFull: {
      // Rows of document [s, e) see keys [s, q] (causal) or [s, e) (bidirectional). Documents not
      // overlapping both ranges show their rows no key of the rectangle.
      auto first_doc = [&](int64_t token) {
        return static_cast<int64_t>(
                   std::upper_bound(doc_starts_.begin(), doc_starts_.end(), token) -
                   doc_starts_.begin()) -
               1;
      };
      const int64_t d_begin = std::max(first_doc(q0), first_doc(k0));
      const int64_t d_end = std::min(first_doc(q1 - 1), first_doc(k1 - 1));
      int64_t total = 0;
      for (int64_t d = d_begin; d <= d_end; ++d) {
        const int64_t s = doc_starts_[d], e = doc_starts_[d + 1];
        const int64_t qa = std::max(q0, s), qb = std::min(q1, e);
        const bool from_first_key = s <= k0;  // the run starts at or before k0
        if (mask_.kind == MaskKind::kDocumentsFull) {
          // Every row of the document sees [max(s, k0), min(e, k1)): all of it iff s <= k0, k1 <=
          // e.
          if (!(from_first_key && k1 <= e)) total += qb - qa;
        } else {
          // Some iff q >= max(s, k0); all iff s <= k0 and q >= k1 - 1.
          total += Overlap(qa, qb, std::max(s, k0), qb) -
                   (from_first_key ? Overlap(qa, qb, k1 - 1, qb) : 0);
        }
      }
      return total;
    }
  }
  return 0;
}

}  // namespace meshplan
