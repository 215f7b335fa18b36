// The attention workload: one attention layer of one training step.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/base/dtype.h"
#include "core/base/status.h"
#include "core/sequence/mask.h"

namespace meshplan {

enum class Pass { kForward, kBackward, kForwardBackward };
std::string_view PassName(Pass pass);
// "fwd", "bwd", "fwd+bwd".
Result<Pass> ParsePass(std::string_view text);
inline bool HasForward(Pass p) { return p != Pass::kBackward; }
inline bool HasBackward(Pass p) { return p != Pass::kForward; }

// Largest sequence the exact pair counts support without overflow (2^30 tokens).
inline constexpr int64_t kMaxSeqLen = int64_t{1} << 30;
// Most elements one tensor of a workload may have (batch x seq x heads x head_dim for Q and O):
// 2^56, so that the bytes of the few tensors of a layer in the widest type (8 bytes, the float64
// reference) add up without overflowing int64: 5 x 2^56 x 8 < 2^63.
inline constexpr int64_t kMaxTensorElements = int64_t{1} << 56;

struct Workload {
  int64_t batch = 1;
  int64_t seq_len = int64_t{1} << 20;  // tokens per sequence
  int64_t q_heads = 64;
  int64_t kv_heads = 8;  // GQA: q_heads is a multiple of kv_heads
  int64_t head_dim = 128;
  DType dtype = DType::kBf16;
  // Type in which not-yet-reduced partials travel (partial O, dQ, dK, dV): fp32 by default, as
  // ring-flash-attention and FlashAttention accumulate; bf16 halves those bytes.
  DType partial_dtype = DType::kFp32;
  Mask mask = Mask::Causal();
  Pass pass = Pass::kForwardBackward;

  // The default workload: a 70B-class attention layer at 1M tokens (see README).
  static Workload Default() { return Workload{}; }

  int64_t group_size() const { return q_heads / kv_heads; }  // g = Hq / Hkv
  // Self-consistency (positive sizes, seq <= kMaxSeqLen, batch x seq x heads x head_dim <=
  // kMaxTensorElements, GQA divisibility, mask vs sequence). Errors name the field.
  Status Validate() const;
  // "B=1 S=1M Hq=64 Hkv=8 d=128 bf16 causal fwd+bwd"
  std::string Describe() const;
};

// Sets w.seq_len and draws a sampled document mask's documents for it (core/sequence/mask.h); every
// change of the sequence length goes through here. Errors: the draw's (too many documents).
Status SetSequenceLength(Workload& w, int64_t seq_len);

}  // namespace meshplan
