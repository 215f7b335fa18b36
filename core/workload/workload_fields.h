// A workload described field by field, each field optional: what one layer of settings (a sweep
// file, the flags given on a command line) says, to be laid over a base workload.
#pragma once

#include <cstdint>
#include <optional>

#include "core/base/dtype.h"
#include "core/sequence/mask.h"
#include "core/workload/workload.h"

namespace meshplan {

struct WorkloadFields {
  std::optional<int64_t> batch;
  std::optional<int64_t> seq_len;
  std::optional<int64_t> q_heads;
  std::optional<int64_t> kv_heads;
  std::optional<int64_t> head_dim;
  std::optional<DType> dtype;
  std::optional<DType> partial_dtype;
  std::optional<Mask> mask;
  std::optional<Pass> pass;

  // `base` with the fields set here replaced; not validated (a later layer may still change it).
  Workload ApplyTo(Workload base) const;
  // Replaces the fields that `top` sets by top's: `top` is the layer above this one.
  void Overlay(const WorkloadFields& top);

 private:
  // Calls f(field of WorkloadFields, matching field of Workload) for every field.
  template <typename F>
  static void ForEachField(F f) {
    f(&WorkloadFields::batch, &Workload::batch);
    f(&WorkloadFields::seq_len, &Workload::seq_len);
    f(&WorkloadFields::q_heads, &Workload::q_heads);
    f(&WorkloadFields::kv_heads, &Workload::kv_heads);
    f(&WorkloadFields::head_dim, &Workload::head_dim);
    f(&WorkloadFields::dtype, &Workload::dtype);
    f(&WorkloadFields::partial_dtype, &Workload::partial_dtype);
    f(&WorkloadFields::mask, &Workload::mask);
    f(&WorkloadFields::pass, &Workload::pass);
  }
};

}  // namespace meshplan
