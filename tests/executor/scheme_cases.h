// The scheme configurations every executor numerics test runs (CPU executor, device engine):
// every scheme, every layout a mask allows, every tile shape of the 2-D schemes (ATTENTION2D and
// ATTENTION2D-O), both Mesh reduce chains, cache on and off, MHA and GQA, for P ranks and a
// 192-token sequence.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/cluster/topology.h"
#include "core/plan/plan.h"
#include "core/sequence/mask.h"
#include "executor/io/tensor.h"
#include "planner/schemes/registry.h"

namespace meshplan::exec {

inline Topology Cluster(int64_t gpus) {
  Topology t;
  t.name = "test";
  t.source = "test";
  t.gpu.model = "cpu";
  t.gpu.memory_bytes = 1e12;
  t.gpu.hbm_bytes_per_s = 1e12;
  t.gpu.peak_tflops = {{DType::kBf16, 100}, {DType::kFp32, 100}};
  t.gpu.attention_efficiency = {{1, 1.0}};
  t.levels.push_back({"link", LinkKind::kSwitch, gpus, 1e11, 1e-6, 1.0, {}, {}});
  return t;
}

// max |x - ref| / max |ref|; an LSE of -inf (a row with nothing visible) must be -inf exactly.
inline double MaxRelativeError(const TensorF& got, const TensorD& want) {
  double worst = 0, scale = 0;
  for (size_t i = 0; i < want.data.size(); ++i) {
    if (std::isnan(got.data[i])) return INFINITY;  // a poisoned or broken output
    if (std::isinf(want.data[i])) {                // LSE of a row with nothing visible
      if (!(std::isinf(got.data[i]) && got.data[i] < 0)) return INFINITY;
      continue;
    }
    worst = std::max(worst, std::abs(static_cast<double>(got.data[i]) - want.data[i]));
    scale = std::max(scale, std::abs(want.data[i]));
  }
  return scale > 0 ? worst / scale : worst;
}

struct Case {
  int64_t gpus;
  SchemeParams params;
  Mask mask;
  int64_t hq, hkv, batch;
};

inline std::vector<Mask> Masks() {
  // Documents sum to 192; the prefix ends inside a shard for every P tested.
  return {Mask::Full(),
          Mask::Causal(),
          Mask::Window(40),
          Mask::Documents({30, 5, 97, 60}),
          Mask::Documents({30, 5, 97, 60}, true),
          Mask::Prefix(50)};
}

inline SchemeParams Params(Scheme s, Layout layout) {
  SchemeParams p;
  p.scheme = s;
  p.layout = layout;
  return p;
}

inline std::vector<Case> SchemeCases(int64_t P, const Mask& mask) {
  const Layout balanced = mask.kind == MaskKind::kFull ? Layout::kContiguous : Layout::kZigzag;
  std::vector<Case> cases;
  for (auto [hq, hkv] : {std::pair<int64_t, int64_t>{4, 4}, {8, 2}}) {  // MHA and GQA (g = 4)
    // Ring in every layout the mask allows, with and without the forward cache.
    for (Layout layout : {Layout::kContiguous, Layout::kZigzag, Layout::kStriped}) {
      if (layout == Layout::kStriped && mask.kind != MaskKind::kFull &&
          mask.kind != MaskKind::kCausal)
        continue;
      SchemeParams p = Params(Scheme("ring"), layout);
      p.ring = P;
      cases.push_back({P, p, mask, hq, hkv, 1});
      // Cached: the backward runs the own shard last (RingPass::own_shard_last).
      p.cache_forward = true;
      cases.push_back({P, p, mask, hq, hkv, 1});
    }
    SchemeParams ag = Params(Scheme("allgather-kv"), balanced);
    ag.ring = P;
    ag.cache_forward = true;
    cases.push_back({P, ag, mask, hq, hkv, 2});
    // The load-balanced dispatch the search offers the 1-D schemes for document masks.
    if (mask.IsDocuments()) {
      SchemeParams ring = Params(Scheme("ring"), Layout::kBalanced);
      ring.ring = P;
      cases.push_back({P, ring, mask, hq, hkv, 1});
      SchemeParams gather = Params(Scheme("allgather-kv"), Layout::kBalanced);
      gather.ring = P;
      cases.push_back({P, gather, mask, hq, hkv, 1});
      if (P % 2 == 0 && hkv % 2 == 0) {
        SchemeParams usp = Params(Scheme("usp"), Layout::kBalanced);
        usp.ulysses = 2;
        usp.ring = P / 2;
        usp.cache_forward = true;
        cases.push_back({P, usp, mask, hq, hkv, 1});
      }
    }
    if (hkv % P == 0) {
      SchemeParams u = Params(Scheme("ulysses"), Layout::kContiguous);
      u.ulysses = P;
      cases.push_back({P, u, mask, hq, hkv, 1});
    }
    if (P % 2 == 0 && hkv % 2 == 0) {
      SchemeParams usp = Params(Scheme("usp"), balanced);
      usp.ulysses = 2;
      usp.ring = P / 2;
      cases.push_back({P, usp, mask, hq, hkv, 1});
      SchemeParams hybrid = Params(Scheme("mesh-ulysses"), balanced);
      hybrid.ulysses = 2;
      hybrid.tile_a = (P / 2) % 2 == 0 ? 2 : 1;
      hybrid.tile_b = (P / 2) / hybrid.tile_a;
      hybrid.cache_forward = true;
      cases.push_back({P, hybrid, mask, hq, hkv, 1});
      if (P / 2 >= 4) {
        SchemeParams lt = Params(Scheme("loongtrain"), balanced);
        lt.ulysses = 2;
        lt.ring = P / 2;
        lt.window = 2;
        cases.push_back({P, lt, mask, hq, hkv, 1});
      }
    }
    // Every tile shape of the 2-D schemes, both reduce chains for Mesh.
    for (int64_t a = 1; a <= P; ++a) {
      if (P % a) continue;
      SchemeParams a2d = Params(Scheme("attention2d"), balanced);
      a2d.tile_a = a;
      a2d.tile_b = P / a;
      a2d.cache_forward = a % 2 == 0;
      cases.push_back({P, a2d, mask, hq, hkv, 1});
      // ATTENTION2D-O with the other cache choice than ATTENTION2D's, so both run per tile.
      SchemeParams a2do = a2d;
      a2do.scheme = Scheme("attention2d-o");
      a2do.cache_forward = !a2d.cache_forward;
      cases.push_back({P, a2do, mask, hq, hkv, 1});
      SchemeParams mesh = Params(Scheme("mesh"), balanced);
      mesh.tile_a = a;
      mesh.tile_b = P / a;
      mesh.reduce_chain = a % 2 == 0 ? ReduceChain::kOwnerFirst : ReduceChain::kOwnerLast;
      mesh.cache_forward = (P / a) % 2 == 0;
      cases.push_back({P, mesh, mask, hq, hkv, 1});
      // The striped layout the search offers the 2-D schemes for causal masks (TileLayouts).
      if (mask.kind == MaskKind::kFull || mask.kind == MaskKind::kCausal) {
        SchemeParams striped_mesh = mesh;
        striped_mesh.layout = Layout::kStriped;
        cases.push_back({P, striped_mesh, mask, hq, hkv, 1});
        SchemeParams striped_a2d = a2d;
        striped_a2d.layout = Layout::kStriped;
        cases.push_back({P, striped_a2d, mask, hq, hkv, 1});
        SchemeParams striped_a2do = a2do;
        striped_a2do.layout = Layout::kStriped;
        cases.push_back({P, striped_a2do, mask, hq, hkv, 1});
      }
    }
  }
  return cases;
}

}  // namespace meshplan::exec
