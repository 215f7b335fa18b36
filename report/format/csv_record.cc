#include "report/format/csv_record.h"

#include "core/base/csv.h"
#include "core/base/dtype.h"

namespace meshplan::report {

void CsvRecord::Add(std::string column, std::string value) {
  fields_.emplace_back(std::move(column), std::move(value));
}

void CsvRecord::AddNumber(std::string column, double value) {
  Add(std::move(column), CsvNumber(value));
}

void CsvRecord::AddInt(std::string column, long long value) {
  Add(std::move(column), std::to_string(value));
}

std::string CsvRecord::Header() const {
  std::string out;
  for (size_t i = 0; i < fields_.size(); ++i) out += (i ? "," : "") + CsvField(fields_[i].first);
  return out + "\n";
}

std::string CsvRecord::Row() const {
  std::string out;
  for (size_t i = 0; i < fields_.size(); ++i) out += (i ? "," : "") + CsvField(fields_[i].second);
  return out + "\n";
}

void AddWorkloadColumns(const Workload& w, CsvRecord& record) {
  record.AddInt("batch", w.batch);
  record.AddInt("seq_len", w.seq_len);
  record.AddInt("q_heads", w.q_heads);
  record.AddInt("kv_heads", w.kv_heads);
  record.AddInt("head_dim", w.head_dim);
  record.Add("dtype", std::string(DTypeName(w.dtype)));
  record.Add("mask", w.mask.ToString());
  record.Add("pass", std::string(PassName(w.pass)));
}

}  // namespace meshplan::report
