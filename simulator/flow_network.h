// Flow-level network: transfers are flows over the links of their route and share link
// bandwidth max-min fairly. Rates are recomputed only for the flows connected (through shared
// links) to a flow that starts or finishes.
//
// Links: every GPU has an egress and an ingress link at every level (its NIC or NVLink ports,
// per-direction bandwidth). A level with oversubscription f > 1 also has, per group of the level
// below (e.g. per node), an uplink and a downlink of capacity (GPUs in the group x bandwidth / f)
// that all traffic leaving or entering the group at that level shares. On ring and torus levels
// the units of the level below (GPUs, or nodes) are joined by neighbour links, one per unit,
// dimension and direction, each of (GPUs in the unit x the level's bandwidth) per direction; a
// transfer crosses every link of its route (Topology::ForEachHop) and each carries its bytes, so
// flows that share a link share its bandwidth, and flows whose routes are disjoint do not. On a
// full-mesh level (the innermost, GPUs joined pairwise) every ordered pair of the group has its
// own link of the level's bandwidth, which a transfer between the two crosses besides the GPUs'
// ports (each the sum of the GPU's links).
//
// Ranks that share a device (GpuSpec::ranks_per_device > 1) move messages between themselves as
// memory copies that the device's own processors make (CPU cores packing and unpacking; a GPU's
// SMs or copy engines). One copy runs at the innermost level's bandwidth (what calibrate's
// ping-pong measures, one message at a time); copies at once share the device as its kernels do,
// min(concurrent_kernels, ranks_per_device) at full speed. So every transfer inside a device also
// crosses the device's copy link of that many times the level's bandwidth. (Copies competing with
// the device's compute kernels are not modelled: docs/simulator.md.)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/cluster/topology.h"
#include "simulator/sim_time.h"

namespace meshplan::sim {

class FlowNetwork {
 public:
  explicit FlowNetwork(const Topology& topology);

  // Starts a flow of `bytes` from GPU src to GPU dst (src != dst) at `now`; returns its id.
  int32_t Add(SimTime now, int64_t src_gpu, int64_t dst_gpu, double bytes);
  // Ends a finished flow at `now`.
  void Remove(SimTime now, int32_t flow);
  // Flows whose rate changed since the last TakeChanged() (new flows included).
  std::vector<int32_t> TakeChanged();
  // When the flow finishes at its current rate.
  SimTime FinishTime(int32_t flow, SimTime now) const;
  uint32_t version(int32_t flow) const { return flows_[flow].version; }
  bool active(int32_t flow) const { return flows_[flow].active; }
  int level(int32_t flow) const { return flows_[flow].level; }
  // Level a transfer between two GPUs uses (Topology::LevelOf).
  int LevelOf(int64_t src_gpu, int64_t dst_gpu) const {
    return topology_.LevelOf(src_gpu, dst_gpu);
  }

  // The neighbour link of a ring or torus level (a pair link of a full mesh) that carried the
  // most bytes so far (flows count in full when they start), for per-link statistics; bytes 0
  // when the level has none.
  struct LinkLoad {
    double bytes = 0;
    double bytes_per_s = 0;  // the link's capacity
    std::string name;        // "unit 1 -> 2 (dimension 0)", "gpu 1 -> 2"
  };
  LinkLoad BusiestRouteLink(int level) const;

  // Symmetry classes (rank_symmetry.h): the replay starts only the flows of representative ranks,
  // and each stands for its images under the group that `gpu_maps` generate (each a permutation
  // of the GPUs; `group_order` elements in all). Every link is replaced by the first link of its
  // orbit, and a flow that crosses link l counts there |Stab(l)| = group_order / |orbit(l)| times
  // per crossing (the images of the flow that cross it), so the max-min rates are those of the
  // full network (every image of a flow has its rate). Errors: a map that splits a shared link's
  // group, device copy links or hop-by-hop routes (no symmetry is taken there), an orbit whose
  // size does not divide the group's order. Call before the first Add.
  Status UseSymmetry(const std::vector<std::vector<int64_t>>& gpu_maps, int64_t group_order);

 private:
  struct Flow {
    std::vector<int32_t> links;    // reused with the flow's slot, so steady state allocates nothing
    std::vector<int32_t> weights;  // with symmetry: per link, the flow's images that cross it
    int8_t level = 0;
    bool active = false;
    double remaining = 0;  // bytes (hop-weighted)
    double rate = 0;       // bytes per nanosecond
    SimTime updated = 0;   // when remaining was last brought up to date
    uint32_t version = 0;
  };
  void Recompute(SimTime now, const std::vector<int32_t>& seed_links);
  void Advance(Flow& f, SimTime now) const;

  const Topology& topology_;
  int levels_;
  std::vector<double> capacity_;               // bytes per nanosecond, per link
  std::vector<std::vector<int32_t>> on_link_;  // active flows per link
  std::vector<int64_t> uplink_base_;           // per level: first uplink id, or -1
  int64_t ranks_per_device_ = 1;
  int64_t device_link_base_ = -1;  // first device copy link id, or -1
  // Per level: first neighbour link id of a ring/torus level, or -1; link id = base + (unit x
  // dimensions + dimension) x 2 + (0 upwards, 1 downwards).
  std::vector<int64_t> route_link_base_;
  // First pair link of a full-mesh level 0, or -1; the link from GPU a to GPU b of its group is
  // mesh_link_base_ + a x (group size) + b mod (group size).
  int64_t mesh_link_base_ = -1;
  int64_t MeshLink(int64_t src, int64_t dst) const;
  std::vector<double> link_bytes_;  // bytes started over each link
  // Symmetry (UseSymmetry): each link's orbit representative and its stabiliser's order, and per
  // link the summed weights of its active flows (which replace the flow count in the filling).
  bool weighted_ = false;
  std::vector<int32_t> canonical_, stabilizer_, load_;
  std::vector<Flow> flows_;
  std::vector<int32_t> free_flows_;
  std::vector<int32_t> changed_;
  // Scratch for Recompute.
  std::vector<uint32_t> link_mark_, flow_mark_;
  uint32_t mark_ = 0;
  std::vector<int32_t> comp_links_, comp_flows_, stack_;
  std::vector<double> residual_;
  std::vector<int32_t> unfrozen_;
  std::vector<uint8_t> frozen_;
};

}  // namespace meshplan::sim
