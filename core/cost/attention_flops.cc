#include "core/cost/attention_flops.h"

#include "core/sequence/mask.h"

namespace meshplan {

double WorkloadFlops(const Workload& w) {
  const double pairs = static_cast<double>(PairCounter(w.mask, w.seq_len).Total());
  return 4.0 * static_cast<double>(w.batch) * pairs * static_cast<double>(w.q_heads) *
         static_cast<double>(w.head_dim) * PassFlopsFactor(w.pass);
}

}  // namespace meshplan
