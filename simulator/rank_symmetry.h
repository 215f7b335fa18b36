// Symmetry classes of a replay (issue 15): rank translations that leave the schedule, the
// placement and the network unchanged, so that the replay runs one representative rank per class
// and every other rank does exactly what its representative does (docs/simulator.md, "Symmetry
// classes").
//
// The group: the rank grid of the plan (planner::RankDims, first dimension fastest) translated
// along each dimension d by multiples of a step s_d that divides the dimension's size (s_d = size:
// not translated). Translations act freely, so every class has |G| = prod(size_d / s_d) ranks and
// there are prod(s_d) classes; the representative of a class is its rank whose coordinates are all
// below their steps.
//
// Soundness rests on three checks, each against the generators (one translation per translated
// dimension), which suffice because the checked properties are closed under composition:
//   - topology: every generator maps the GPUs of each group of every level onto the GPUs of one
//     group (FindTopologySymmetry; ring and torus levels, whose links follow coordinates, and
//     devices that ranks share are refused);
//   - schedule: every generator maps every rank's program onto the program of the rank it maps
//     that rank to, with peers and collective groups relabelled (SymmetryCheck: a 64-bit digest
//     per rank and generator of everything the replay reads, pairs compared as the expansion
//     hands ranks over; groups by MapGroups once the expansion is done);
//   - network: FlowNetwork::UseSymmetry maps every link to a link (its own check).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/cluster/topology.h"
#include "core/plan/schedule.h"

namespace meshplan::sim {

class RankSymmetry {
 public:
  RankSymmetry() = default;
  // REQUIRES: sizes multiply to the rank count; each step divides its size.
  RankSymmetry(std::vector<int64_t> sizes, std::vector<int64_t> steps);

  int64_t num_ranks() const { return num_ranks_; }
  // Ranks per class (|G|) and the number of classes.
  int64_t ClassSize() const { return class_size_; }
  int64_t Classes() const { return num_ranks_ / class_size_; }
  bool Trivial() const { return class_size_ <= 1; }
  const std::vector<int64_t>& sizes() const { return sizes_; }
  const std::vector<int64_t>& steps() const { return steps_; }

  int64_t Representative(int64_t rank) const;
  bool IsRepresentative(int64_t rank) const { return Representative(rank) == rank; }
  // The image of `rank` under the translation that takes `of` to its representative.
  int64_t InFrameOf(int64_t of, int64_t rank) const;
  // The translated dimensions (those with step < size), whose generators the checks use.
  std::vector<int> Generators() const;
  // Generator of dimension d applied to `rank`: coordinate d advanced by its step (cyclically).
  int64_t Apply(int d, int64_t rank) const;
  // Its inverse: coordinate d moved back by its step.
  int64_t ApplyInverse(int d, int64_t rank) const;
  // "8 classes of 2048 ranks (q step 8, kv step 1)" given the dimension names.
  std::string Describe(const std::vector<std::string>& names) const;

 private:
  int64_t Coord(int64_t rank, size_t d) const { return (rank / strides_[d]) % sizes_[d]; }
  std::vector<int64_t> sizes_, steps_, strides_;
  int64_t num_ranks_ = 0, class_size_ = 1;
};

// The largest translation group the topology and placement allow: per rank-grid dimension the
// smallest step (a divisor of its size, tried in increasing order) whose translation maps every
// group of every level onto one group. Errors (one line, the reason there is no symmetry):
// ranks sharing a device, a ring or torus level, grid sizes that do not multiply to the GPUs, a
// placement that is not a permutation, or no dimension with a step below its size.
Result<RankSymmetry> FindTopologySymmetry(const std::vector<int64_t>& dim_sizes,
                                          const std::vector<int64_t>& rank_to_gpu,
                                          const Topology& topology);

// How the symmetry acts on a schedule's collective groups: every generator maps each group's
// members onto a group's members in the same cyclic order (member k's image is member k + shift of
// the image group: ring collectives keep their neighbours), so groups fall into orbits; and every
// rank belongs to at most one group of an orbit (then the group of an orbit that holds a given
// rank is unique). Without groups: no orbits.
struct GroupOrbits {
  std::vector<int32_t> orbit;  // per group, its orbit (0 .. count - 1)
  int32_t count = 0;
  // Per generator (RankSymmetry::Generators order), per group: the group its members map onto.
  std::vector<std::vector<int32_t>> image;
};
// Errors (one line): a group whose image is no group in the same cyclic order, a rank in two groups
// of one orbit.
Result<GroupOrbits> MapGroups(const RankSymmetry& symmetry,
                              const std::vector<std::vector<int32_t>>& groups);

// Collects, rank by rank during the expansion, digests of each program as the replay reads it
// (kinds, streams, phases, FLOPs, cut fractions, bytes, kernel counts, deps, peers), plain and
// with peers relabelled by each generator, and checks that each generator maps every program onto
// its image's: each pair (r, generator(r)) as soon as both ranks' programs were taken, so that a
// schedule without the symmetry is found out early (usually before a representative's image).
// Collectives name groups, which only the expanded schedule lists: their group ids are kept in
// program order and checked against the groups' images in Verify.
class SymmetryCheck {
 public:
  SymmetryCheck(const RankSymmetry& symmetry, std::vector<std::string> dim_names);
  // REQUIRES: called once per rank, with its complete program. False once any pair has failed
  // (this one or an earlier one; status() says which).
  bool Take(int64_t rank, const RankProgram& program);
  // Ok while no pair has failed, else the first rank and generator whose image's program differs
  // (one line).
  const Status& status() const { return status_; }
  // Ok when every rank was taken, no pair failed, and (with collectives) the groups map onto
  // groups (MapGroups) so that each rank's sequence of collective groups maps onto its image's.
  // every_rank false (a structural proof's spot check: only some ranks were expanded): the same
  // over the ranks taken with their images.
  Status Verify(const std::vector<std::vector<int32_t>>& groups, bool every_rank = true) const;

 private:
  void Compare(int64_t rank, size_t generator);  // rank's mapped digest against its image's
  std::string NameOf(int d) const;               // dimension d's name
  const RankSymmetry& symmetry_;
  std::vector<std::string> names_;
  Status status_ = Status::Ok();
  std::vector<int> generators_;
  std::vector<uint64_t> plain_;   // per rank
  std::vector<uint64_t> mapped_;  // per rank x generator
  std::vector<uint8_t> taken_;
  std::vector<std::vector<int32_t>>
      collective_groups_;  // per rank, its collectives' groups in order
};

}  // namespace meshplan::sim
