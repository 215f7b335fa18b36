#include "core/workload/workload.h"

#include <optional>

#include "core/base/checked_math.h"
#include "core/base/units.h"

namespace meshplan {

std::string_view PassName(Pass pass) {
  switch (pass) {
    case Pass::kForward:
      return "fwd";
    case Pass::kBackward:
      return "bwd";
    case Pass::kForwardBackward:
      return "fwd+bwd";
  }
  return "fwd+bwd";
}

Result<Pass> ParsePass(std::string_view text) {
  for (Pass p : {Pass::kForward, Pass::kBackward, Pass::kForwardBackward}) {
    if (text == PassName(p)) return p;
  }
  return Status::Invalid("unknown pass '" + std::string(text) + "' (expected fwd, bwd or fwd+bwd)");
}

Status Workload::Validate() const {
  auto positive = [](const char* name, int64_t v) {
    return v > 0
               ? Status::Ok()
               : Status::Invalid(std::string(name) + " must be positive, got " + std::to_string(v));
  };
  MESHPLAN_RETURN_IF_ERROR(positive("batch", batch));
  MESHPLAN_RETURN_IF_ERROR(positive("seq", seq_len));
  MESHPLAN_RETURN_IF_ERROR(positive("heads", q_heads));
  MESHPLAN_RETURN_IF_ERROR(positive("kv-heads", kv_heads));
  MESHPLAN_RETURN_IF_ERROR(positive("head-dim", head_dim));
  if (seq_len > kMaxSeqLen) {
    return Status::Invalid("seq " + std::to_string(seq_len) +
                           " exceeds the supported maximum of 2^30 tokens");
  }
  // q_heads >= kv_heads once the divisibility below holds, so this bounds K and V too.
  const std::optional<int64_t> elements = CheckedProduct({batch, seq_len, q_heads, head_dim});
  if (!elements || *elements > kMaxTensorElements) {
    return Status::Invalid("batch (" + std::to_string(batch) + ") x seq (" +
                           std::to_string(seq_len) + ") x heads (" + std::to_string(q_heads) +
                           ") x head-dim (" + std::to_string(head_dim) +
                           ") is more than the 2^56 elements a tensor may have");
  }
  if (q_heads % kv_heads != 0) {
    return Status::Invalid("heads (" + std::to_string(q_heads) +
                           ") must be a multiple of kv-heads (" + std::to_string(kv_heads) + ")");
  }
  return ValidateMask(mask, seq_len).WithContext("mask");
}

std::string Workload::Describe() const {
  return "B=" + std::to_string(batch) + " S=" + FormatCount(seq_len) +
         " Hq=" + std::to_string(q_heads) + " Hkv=" + std::to_string(kv_heads) +
         " d=" + std::to_string(head_dim) + " " + std::string(DTypeName(dtype)) + " " +
         mask.ToString() + " " + std::string(PassName(pass));
}

Status SetSequenceLength(Workload& w, int64_t seq_len) {
  w.seq_len = seq_len;
  if (seq_len < 1) return Status::Ok();  // Validate names the field
  return DrawDocuments(&w.mask, seq_len).WithContext("mask");
}

}  // namespace meshplan
