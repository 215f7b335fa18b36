// One record of a CSV file as named columns: the header line and the row line from the same list,
// so a header can never drift from its row. Reports whose runs append into one file (`simulate`
// and `execute --format csv`) build their row here, with the same columns whatever the plan.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/workload/workload.h"

namespace meshplan::report {

class CsvRecord {
 public:
  void Add(std::string column, std::string value);
  // A number at full precision (CsvNumber); an empty field when not finite.
  void AddNumber(std::string column, double value);
  void AddInt(std::string column, long long value);

  // "a,b,c\n" and "1,2,3\n" (RFC 4180 fields).
  std::string Header() const;
  std::string Row() const;

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

// The workload's columns: batch, seq_len, q_heads, kv_heads, head_dim, dtype, mask, pass.
void AddWorkloadColumns(const Workload& w, CsvRecord& record);

}  // namespace meshplan::report
