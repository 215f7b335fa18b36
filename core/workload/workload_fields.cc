#include "core/workload/workload_fields.h"

namespace meshplan {

Workload WorkloadFields::ApplyTo(Workload base) const {
  ForEachField([&](auto field, auto member) {
    if (this->*field) base.*member = *(this->*field);
  });
  return base;
}

void WorkloadFields::Overlay(const WorkloadFields& top) {
  ForEachField([&](auto field, auto) {
    if (top.*field) this->*field = top.*field;
  });
}

}  // namespace meshplan
