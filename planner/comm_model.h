// Communication model of the planner: which network level each rank's traffic crosses, how many
// bytes that is per level, and how long a pattern takes on an otherwise idle network.
//
// Assumptions (docs/planner-model.md): every GPU has its own bandwidth at every level (a NIC per
// GPU, NVSwitch ports per GPU); a transfer between two GPUs uses the innermost level holding
// both; traffic crossing an oversubscribed level shares the uplink of its unit (GPUs x bandwidth
// / oversubscription: all of the unit's GPUs in an all-to-all, the shift's own crossing flows in a
// shift, as the simulator's flow network shares it); on ring and torus
// levels a shift is charged, per GPU, by the most loaded neighbour link of its route (every GPU of
// the pattern sending at once) and pays the latency per hop; on a full-mesh level a send crosses
// the one link to its peer (a shift's sends each their own link), an all-to-all's share to each
// peer its own link, and a ring collective's steps are spread over the links to every other
// member (RingCollectiveSpreadOf). Levels are used
// concurrently (NVLink and NIC are different links). Contention between patterns is the
// simulator's job.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "core/cluster/topology.h"
#include "core/plan/plan.h"

namespace meshplan::planner {

// Bytes sent per GPU per level.
class Traffic {
 public:
  Traffic(int64_t num_gpus, int num_levels)
      : levels_(num_levels), bytes_(static_cast<size_t>(num_gpus * num_levels), 0.0) {}
  void Add(int64_t gpu, int level, double bytes) { bytes_[gpu * levels_ + level] += bytes; }
  // Adds scale * per_entry[i] to entry i (per_entry laid out [gpu * levels + level]).
  void AddScaled(const std::vector<double>& per_entry, double scale) {
    for (size_t i = 0; i < bytes_.size(); ++i) bytes_[i] += scale * per_entry[i];
  }
  // Max over GPUs of the bytes each sends at each level.
  std::vector<double> MaxPerLevel() const;
  // Max over GPUs of all bytes sent.
  double MaxTotal() const;

 private:
  int levels_;
  std::vector<double> bytes_;
};

// Where the traffic of one GPU-space pattern goes. Cached per (stride, size) because many plans
// share the same patterns.
struct PatternRoute {
  // Ring shift: per GPU, the level and hops of its send to the neighbour at coordinate - 1.
  std::vector<int8_t> level;
  std::vector<int32_t> hops;
  std::vector<double> weight;  // ShiftCost::weight of each GPU's send
  // 1 at [gpu * levels + level of its send], else 0: a shift's traffic is one scaled add.
  std::vector<double> shift_entry;
  // How one GPU's send of a shift is charged: the level, its hops (latency is paid per hop on
  // ring and torus levels) and `weight`, the multiple of bytes / (per-GPU bandwidth) it takes.
  // Weight is 1 on switch and fat-tree levels; on ring and torus levels it is the most loaded
  // neighbour link of its route (flows of the shift crossing it) over that link's capacity in
  // GPUs (the GPUs of a unit of the level below), at least 1 (the GPU's own port): the
  // simulator's per-link routes, for a pattern where every GPU sends at once. On a level with
  // oversubscription f > 1 it is at least f x (the shift's flows leaving the sender's unit of the
  // level below, or entering the receiver's, whichever is more) / (GPUs in that unit): the
  // flows' share of the unit's uplink of GPUs x bandwidth / f (f when every GPU crosses).
  // `bandwidth_bytes_per_s` and `latency_s`: the send's ports, the slower of the two ends on a
  // level with mixed fabrics (Topology::PairBandwidth), else the level's own.
  struct ShiftCost {
    int level = 0;
    int32_t hops = 0;
    double weight = 1;
    double bandwidth_bytes_per_s = 0;
    double latency_s = 0;
    bool operator==(const ShiftCost&) const = default;
  };
  // Distinct costs present, for the time of one shift.
  std::vector<ShiftCost> distinct;
  // All-to-all: per GPU and level, the number of the other members reached over that level
  // (weighted by hops); filled only for all-to-all routes.
  std::vector<double> a2a_weight;  // [gpu * levels + level]
  std::vector<double> a2a_peers;   // same, not weighted by hops
  // All-to-all time per GPU is per_peer_bytes * slope + intercept; the distinct (slope,
  // intercept) pairs over all GPUs, so the slowest GPU is found without rescanning them. On a
  // level with mixed fabrics a GPU's sends share its own port (Topology::PortBandwidth) and wait
  // for the slowest peer's latency; the slowest GPU, the pattern's end, is the one on the
  // slowest fabric, whose port every other member's traffic with it also crosses.
  std::vector<std::pair<double, double>> a2a_time_terms;
};

// How NCCL (RCCL) spreads a ring collective's step from `gpu` to `peer` over links, running the
// collective on several rings at once (its channels), each rotated so that the rings together
// use more links than one ring's:
// - a step that crosses a NIC level (a switch or fat tree above the innermost level) is spread
//   over the NICs of the group's members in the sender's unit of the level below: each carries
//   1/g of it, g those members (the sender included);
// - a step on a full-mesh level (AMD xGMI: RCCL's rings for such a node, ROCm/rccl 0cbce2a
//   src/graph/rome_models.cc ringBase, are permutations that use every link) is spread over the
//   sender's direct links to the group's other members in its full-mesh group: each carries
//   1/(g - 1) of it, g the members there (the sender included).
// `span`: the GPUs of the unit whose members are counted (0: not spread: same unit, an innermost
// switch, ring or torus routes); `links_to_others`: the full-mesh case. The planner and the
// simulator both charge a collective step as the share RingCollectiveStepShare gives (g counted by
// each over the group's GPUs).
struct RingCollectiveSpread {
  int64_t span = 0;
  bool links_to_others = false;
};
RingCollectiveSpread RingCollectiveSpreadOf(const Topology& topology, int64_t gpu, int64_t peer);
// The share of the step one link carries: 1/g (NICs) or 1/(g - 1) (full mesh), g the group's
// members in the sender's unit of `spread.span` GPUs (at least 1 link).
double RingCollectiveStepShare(const RingCollectiveSpread& spread, int64_t members_in_span);

class CommModel {
 public:
  explicit CommModel(const Topology& topology);

  const Topology& topology() const { return topology_; }

  // A ring shift along dimension `dim` of `placement`: every rank sends `bytes` to the rank whose
  // coordinate along dim is one lower (wrapping), `count` times. Adds the bytes to `traffic`
  // (may be null) and returns the time of ONE shift: the slowest rank's latency + bytes/bw.
  double RingShift(const Placement& placement, int dim, double bytes, int64_t count,
                   Traffic* traffic);
  // A ring collective (all-gather of a `chunk_bytes` shard, or reduce-scatter leaving one) over
  // dim: p-1 ring steps of chunk_bytes. Returns its time. A step that leaves a node over a NIC
  // level (switch or fat tree above the innermost) is charged as NCCL runs it, on the NICs of
  // every member in the sender's node: its channels rotate the ring so that each of those g
  // members' NICs carries 1/g of the crossing; on a full-mesh level its rings use the links to
  // every other member (RingCollectiveSpreadOf). Point-to-point shifts stay on the GPU's own NIC,
  // or on a full mesh on the one link to the peer.
  double RingCollective(const Placement& placement, int dim, double chunk_bytes, Traffic* traffic);
  // All-to-all over dim where each rank holds `bytes` and keeps 1/p of it: (p-1)/p * bytes
  // sent, 1/p to each other member. Returns its time: per GPU, the slowest level's
  // bytes/bandwidth plus (p-1) latencies of the farthest level.
  double AllToAll(const Placement& placement, int dim, double bytes, Traffic* traffic);
  // The level the slowest rank's shift along dim uses (for deciding which patterns share links).
  int BottleneckLevel(const Placement& placement, int dim, double bytes);

 private:
  const PatternRoute& Route(int64_t stride, int64_t size, bool all_to_all, bool collective = false);
  double LinkSeconds(const PatternRoute::ShiftCost& cost, double bytes) const;
  // Fills the weights of a shift's costs on ring and torus levels (PatternRoute::ShiftCost).
  void WeighHopRoutes(const std::vector<int64_t>& peer, PatternRoute* route) const;
  // Raises the weights of a shift's sends on oversubscribed switch and fat-tree levels to their
  // share of the uplinks they cross (ShiftCost::weight).
  void WeighOversubscribedRoutes(const std::vector<int64_t>& peer, PatternRoute* route) const;
  static void GpuStrideAndSize(const Placement& placement, int dim, int64_t* stride, int64_t* size);

  const Topology& topology_;
  std::map<std::tuple<int64_t, int64_t, bool, bool>, std::unique_ptr<PatternRoute>> routes_;
};

}  // namespace meshplan::planner
