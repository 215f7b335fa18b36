#include "simulator/rank_symmetry.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace meshplan::sim {

RankSymmetry::RankSymmetry(std::vector<int64_t> sizes, std::vector<int64_t> steps)
    : sizes_(std::move(sizes)), steps_(std::move(steps)) {
  strides_.resize(sizes_.size());
  num_ranks_ = 1;
  for (size_t d = 0; d < sizes_.size(); ++d) {
    strides_[d] = num_ranks_;
    num_ranks_ *= sizes_[d];
    class_size_ *= sizes_[d] / steps_[d];
  }
}

int64_t RankSymmetry::Representative(int64_t rank) const {
  int64_t out = 0;
  for (size_t d = 0; d < sizes_.size(); ++d) out += (Coord(rank, d) % steps_[d]) * strides_[d];
  return out;
}

int64_t RankSymmetry::InFrameOf(int64_t of, int64_t rank) const {
  int64_t out = 0;
  for (size_t d = 0; d < sizes_.size(); ++d) {
    const int64_t c = Coord(of, d);
    const int64_t offset = c - c % steps_[d];
    out += ((Coord(rank, d) - offset + sizes_[d]) % sizes_[d]) * strides_[d];
  }
  return out;
}

std::vector<int> RankSymmetry::Generators() const {
  std::vector<int> out;
  for (size_t d = 0; d < sizes_.size(); ++d) {
    if (steps_[d] < sizes_[d]) out.push_back(static_cast<int>(d));
  }
  return out;
}

int64_t RankSymmetry::Apply(int d, int64_t rank) const {
  const size_t k = static_cast<size_t>(d);
  const int64_t c = Coord(rank, k);
  return rank + ((c + steps_[k]) % sizes_[k] - c) * strides_[k];
}

int64_t RankSymmetry::ApplyInverse(int d, int64_t rank) const {
  const size_t k = static_cast<size_t>(d);
  const int64_t c = Coord(rank, k);
  return rank + ((c - steps_[k] + sizes_[k]) % sizes_[k] - c) * strides_[k];
}

std::string RankSymmetry::Describe(const std::vector<std::string>& names) const {
  std::string text = std::to_string(Classes()) + (Classes() == 1 ? " class of " : " classes of ") +
                     std::to_string(ClassSize()) + " ranks (";
  for (size_t d = 0; d < sizes_.size(); ++d) {
    if (d > 0) text += ", ";
    text += (d < names.size() ? names[d] : "dim " + std::to_string(d)) + " step " +
            std::to_string(steps_[d]) + " of " + std::to_string(sizes_[d]);
  }
  return text + ")";
}

namespace {

// Whether the GPU permutation `image` maps the GPUs of every group of every level onto the GPUs of
// one group (then groups map to groups bijectively: `image` is a permutation and groups of a
// level are equal in size), each GPU onto one on the same fabric at every level.
bool MapsGroupsToGroups(const std::vector<int64_t>& image, const Topology& topology) {
  const int64_t gpus = topology.num_gpus();
  for (int l = 0; l + 1 < topology.num_levels();
       ++l) {  // the last level's one group maps to itself
    const int64_t span = topology.Span(l);
    for (int64_t first = 0; first < gpus; first += span) {
      const int64_t group = image[static_cast<size_t>(first)] / span;
      for (int64_t g = first + 1; g < first + span; ++g) {
        if (image[static_cast<size_t>(g)] / span != group) return false;
      }
    }
  }
  // Mixed fabrics: every GPU's image has the same port (bandwidth and latency) at every level,
  // so that links map to links of the same capacity and messages to messages of equal latency.
  for (int l = 0; l < topology.num_levels(); ++l) {
    if (topology.levels[l].fabrics.empty()) continue;
    for (int64_t g = 0; g < gpus; ++g) {
      if (topology.FabricOf(l, g) != topology.FabricOf(l, image[static_cast<size_t>(g)]))
        return false;
    }
  }
  return true;
}

}  // namespace

Result<RankSymmetry> FindTopologySymmetry(const std::vector<int64_t>& dim_sizes,
                                          const std::vector<int64_t>& rank_to_gpu,
                                          const Topology& topology) {
  if (topology.gpu.ranks_per_device > 1) return Status::Invalid("ranks share devices");
  for (int l = 0; l < topology.num_levels(); ++l) {
    if (topology.HasHopRoutes(l))
      return Status::Invalid("level '" + topology.levels[l].name + "' routes hop by hop");
  }
  int64_t ranks = 1;
  for (int64_t s : dim_sizes) {
    if (s < 1) return Status::Invalid("a rank-grid dimension is empty");
    ranks *= s;
  }
  const int64_t gpus = topology.num_gpus();
  if (ranks != gpus || static_cast<int64_t>(rank_to_gpu.size()) != gpus) {
    return Status::Invalid("the rank grid does not cover the GPUs");
  }
  std::vector<int64_t> gpu_to_rank(static_cast<size_t>(gpus), -1);
  for (int64_t r = 0; r < gpus; ++r) {
    const int64_t g = rank_to_gpu[static_cast<size_t>(r)];
    if (g < 0 || g >= gpus || gpu_to_rank[static_cast<size_t>(g)] >= 0) {
      return Status::Invalid("the placement is not a permutation of the GPUs");
    }
    gpu_to_rank[static_cast<size_t>(g)] = r;
  }
  std::vector<int64_t> steps(dim_sizes);
  std::vector<int64_t> image(static_cast<size_t>(gpus));
  for (size_t d = 0; d < dim_sizes.size(); ++d) {
    const int64_t size = dim_sizes[d];
    for (int64_t step = 1; step < size; ++step) {
      if (size % step != 0) continue;
      std::vector<int64_t> trial(dim_sizes);  // only dimension d translated, by `step`
      trial[d] = step;
      const RankSymmetry one(dim_sizes, trial);
      for (int64_t g = 0; g < gpus; ++g) {
        const int64_t r = gpu_to_rank[static_cast<size_t>(g)];
        image[static_cast<size_t>(g)] =
            rank_to_gpu[static_cast<size_t>(one.Apply(static_cast<int>(d), r))];
      }
      if (MapsGroupsToGroups(image, topology)) {
        steps[d] = step;
        break;
      }
    }
  }
  RankSymmetry out(dim_sizes, steps);
  if (out.Trivial()) {
    return Status::Invalid(topology.HasMixedFabrics()
                               ? "no rank translation keeps every level's groups together and "
                                 "every GPU on its fabric"
                               : "no rank translation keeps every level's groups together");
  }
  return out;
}

namespace {

// 64 x 64 -> 128-bit multiply, folded: a fast mixer with good avalanche (as wyhash uses it).
inline uint64_t Fold(uint64_t a, uint64_t b) {
  const unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(p) ^ static_cast<uint64_t>(p >> 64);
}
constexpr uint64_t kSeed0 = 0xa0761d6478bd642fULL, kSeed1 = 0xe7037ed1a0b428dbULL;
inline uint64_t Combine(uint64_t h, uint64_t v) { return Fold(h ^ kSeed0, v ^ kSeed1); }

// Everything the timing view and the replay read of op i, except the peer.
uint64_t OpDigest(const RankProgram& program, size_t i) {
  const Op& op = program.ops[i];
  uint64_t h = Combine(
      static_cast<uint64_t>(op.kind) | (static_cast<uint64_t>(op.phase) << 8) |
          (static_cast<uint64_t>(op.stream) << 16) | (static_cast<uint64_t>(op.kernels) << 24) |
          (static_cast<uint64_t>(std::bit_cast<uint32_t>(op.cut_rows_per_pair)) << 32),
      static_cast<uint64_t>(op.bytes));
  h = Combine(h, static_cast<uint64_t>(op.sliced_bytes));
  h = Combine(h, std::bit_cast<uint64_t>(op.flops) ^
                     (static_cast<uint64_t>(op.dep_count) * 0x9e3779b97f4a7c15ULL));
  for (uint32_t k = 0; k < op.dep_count; ++k) h = Combine(h, program.deps[op.dep_begin + k]);
  return h;
}

}  // namespace

SymmetryCheck::SymmetryCheck(const RankSymmetry& symmetry, std::vector<std::string> dim_names)
    : symmetry_(symmetry),
      names_(std::move(dim_names)),
      generators_(symmetry.Generators()),
      plain_(static_cast<size_t>(symmetry.num_ranks()), 0),
      mapped_(static_cast<size_t>(symmetry.num_ranks()) * symmetry.Generators().size(), 0),
      taken_(static_cast<size_t>(symmetry.num_ranks()), 0),
      collective_groups_(static_cast<size_t>(symmetry.num_ranks())) {}

bool SymmetryCheck::Take(int64_t rank, const RankProgram& program) {
  if (!status_.ok()) return false;
  const size_t g = generators_.size();
  uint64_t plain = program.ops.size();
  std::vector<uint64_t> mapped(g, plain);
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const Op& op = program.ops[i];
    const uint64_t digest = OpDigest(program, i);
    if (op.kind == OpKind::kSend || op.kind == OpKind::kRecv) {
      plain = Combine(plain, digest ^ static_cast<uint64_t>(op.peer));
      for (size_t k = 0; k < g; ++k) {
        mapped[k] = Combine(
            mapped[k], digest ^ static_cast<uint64_t>(symmetry_.Apply(generators_[k], op.peer)));
      }
    } else {
      // A collective's group is checked in Verify, which knows the groups.
      if (op.kind != OpKind::kCompute && op.kind != OpKind::kMerge) {
        collective_groups_[static_cast<size_t>(rank)].push_back(op.group);
      }
      plain = Combine(plain, digest);
      for (size_t k = 0; k < g; ++k) mapped[k] = Combine(mapped[k], digest);
    }
  }
  const size_t r = static_cast<size_t>(rank);
  taken_[r] = 1;
  plain_[r] = plain;
  for (size_t k = 0; k < g; ++k) mapped_[r * g + k] = mapped[k];
  // Every pair this rank completes: (rank, its image) and (its preimage, rank).
  for (size_t k = 0; k < g && status_.ok(); ++k) {
    if (taken_[static_cast<size_t>(symmetry_.Apply(generators_[k], rank))]) Compare(rank, k);
    const int64_t preimage = symmetry_.ApplyInverse(generators_[k], rank);
    if (preimage != rank && taken_[static_cast<size_t>(preimage)] && status_.ok())
      Compare(preimage, k);
  }
  return status_.ok();
}

void SymmetryCheck::Compare(int64_t rank, size_t k) {
  const size_t g = generators_.size();
  const int d = generators_[k];
  const int64_t image = symmetry_.Apply(d, rank);
  if (mapped_[static_cast<size_t>(rank) * g + k] == plain_[static_cast<size_t>(image)]) return;
  status_ = Status::Invalid("rank " + std::to_string(rank) + "'s program, moved by " +
                            std::to_string(symmetry_.steps()[static_cast<size_t>(d)]) + " along " +
                            NameOf(d) + ", is not rank " + std::to_string(image) + "'s");
}

Status SymmetryCheck::Verify(const std::vector<std::vector<int32_t>>& groups,
                             bool every_rank) const {
  if (!status_.ok()) return status_;
  bool collectives = false;
  for (int64_t r = 0; r < symmetry_.num_ranks(); ++r) {
    if (taken_[static_cast<size_t>(r)] == 0 && every_rank)
      return Status::Invalid("rank " + std::to_string(r) + "'s program was not checked");
    collectives = collectives || !collective_groups_[static_cast<size_t>(r)].empty();
  }
  if (!collectives) return Status::Ok();
  MESHPLAN_ASSIGN_OR_RETURN(auto orbits, MapGroups(symmetry_, groups));
  for (int64_t r = 0; r < symmetry_.num_ranks(); ++r) {
    const std::vector<int32_t>& mine = collective_groups_[static_cast<size_t>(r)];
    for (size_t k = 0; k < generators_.size(); ++k) {
      const int64_t image = symmetry_.Apply(generators_[k], r);
      if (!taken_[static_cast<size_t>(r)] || !taken_[static_cast<size_t>(image)]) continue;
      const std::vector<int32_t>& theirs = collective_groups_[static_cast<size_t>(image)];
      bool same = mine.size() == theirs.size();
      for (size_t i = 0; same && i < mine.size(); ++i) {
        const int32_t g = mine[i];
        same = g >= 0 && static_cast<size_t>(g) < groups.size() &&
               orbits.image[k][static_cast<size_t>(g)] == theirs[i];
      }
      if (!same) {
        return Status::Invalid("rank " + std::to_string(r) + "'s collectives, moved along " +
                               NameOf(generators_[k]) + ", are not rank " + std::to_string(image) +
                               "'s");
      }
    }
  }
  return Status::Ok();
}

std::string SymmetryCheck::NameOf(int d) const {
  return static_cast<size_t>(d) < names_.size() ? names_[static_cast<size_t>(d)]
                                                : "dim " + std::to_string(d);
}

Result<GroupOrbits> MapGroups(const RankSymmetry& symmetry,
                              const std::vector<std::vector<int32_t>>& groups) {
  GroupOrbits out;
  const size_t n = groups.size();
  // The groups each rank belongs to, to find a member's image group.
  std::vector<std::vector<int32_t>> of_rank(static_cast<size_t>(symmetry.num_ranks()));
  for (size_t g = 0; g < n; ++g) {
    for (int32_t r : groups[g]) {
      if (r < 0 || r >= symmetry.num_ranks())
        return Status::Invalid("group " + std::to_string(g) + " names no rank");
      of_rank[static_cast<size_t>(r)].push_back(static_cast<int32_t>(g));
    }
  }
  std::vector<int32_t> parent(n);
  for (size_t g = 0; g < n; ++g) parent[g] = static_cast<int32_t>(g);
  auto find = [&](int32_t x) {
    while (parent[static_cast<size_t>(x)] != x)
      x = parent[static_cast<size_t>(x)] =
          parent[static_cast<size_t>(parent[static_cast<size_t>(x)])];
    return x;
  };
  for (int d : symmetry.Generators()) {
    std::vector<int32_t> image(n, -1);
    for (size_t g = 0; g < n; ++g) {
      const std::vector<int32_t>& members = groups[g];
      if (members.empty()) {
        image[g] = static_cast<int32_t>(g);
        continue;
      }
      const int64_t first = symmetry.Apply(d, members[0]);
      for (int32_t candidate : of_rank[static_cast<size_t>(first)]) {
        const std::vector<int32_t>& other = groups[static_cast<size_t>(candidate)];
        if (other.size() != members.size()) continue;
        const size_t shift =
            static_cast<size_t>(std::find(other.begin(), other.end(), first) - other.begin());
        bool rotated = true;
        for (size_t k = 0; rotated && k < members.size(); ++k) {
          rotated = other[(k + shift) % other.size()] == symmetry.Apply(d, members[k]);
        }
        if (rotated) {
          image[g] = candidate;
          break;
        }
      }
      if (image[g] < 0) {
        return Status::Invalid("group " + std::to_string(g) +
                               "'s image is no group in the same cyclic order");
      }
      const int32_t a = find(static_cast<int32_t>(g)), b = find(image[g]);
      if (a != b) parent[static_cast<size_t>(std::max(a, b))] = std::min(a, b);
    }
    out.image.push_back(std::move(image));
  }
  out.orbit.assign(n, -1);
  std::vector<int32_t> id(n, -1);
  for (size_t g = 0; g < n; ++g) {
    const int32_t root = find(static_cast<int32_t>(g));
    if (id[static_cast<size_t>(root)] < 0) id[static_cast<size_t>(root)] = out.count++;
    out.orbit[g] = id[static_cast<size_t>(root)];
  }
  for (size_t r = 0; r < of_rank.size(); ++r) {
    std::vector<int32_t> seen;
    for (int32_t g : of_rank[r]) {
      const int32_t o = out.orbit[static_cast<size_t>(g)];
      if (std::find(seen.begin(), seen.end(), o) != seen.end()) {
        return Status::Invalid("rank " + std::to_string(r) + " is in two groups of one orbit");
      }
      seen.push_back(o);
    }
  }
  return out;
}

}  // namespace meshplan::sim
