// Flow-level network: transfers are flows over the links of their route and share link
// bandwidth max-min fairly. Rates are recomputed only for the flows connected (through shared
// links) to a flow that starts or finishes.
//
// Links: every GPU has an egress and an ingress link at every level (its NIC or NVLink ports,
// per-direction bandwidth). A level with oversubscription f > 1 also has, per group of the level
// below (e.g. per node), an uplink and a downlink of capacity (GPUs in the group x bandwidth / f)
// that all traffic leaving or entering the group at that level shares. On ring and torus levels a
// transfer crossing h hops loads h links: it is charged h x bytes.
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
#include <vector>

#include "core/topology.h"
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
  int LevelOf(int64_t src_gpu, int64_t dst_gpu) const { return topology_.LevelOf(src_gpu, dst_gpu); }

 private:
  struct Flow {
    int32_t links[4];
    int8_t num_links = 0;
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
  std::vector<double> capacity_;                // bytes per nanosecond, per link
  std::vector<std::vector<int32_t>> on_link_;   // active flows per link
  std::vector<int64_t> uplink_base_;            // per level: first uplink id, or -1
  int64_t ranks_per_device_ = 1;
  int64_t device_link_base_ = -1;               // first device copy link id, or -1
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
