// Errors as values. A library function that can fail returns Status or Result<T>;
// only tools/ turns an error into an exit code.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace meshplan {

// Kinds of failure. kInvalidInput is what a user can fix (bad file, bad flag, impossible
// plan) and maps to exit code 2 in the CLI; kInternal is a bug.
// kOutOfMemory: memory the machine could not give while running (an allocation inside a rank);
// the CLI reports it as "out of memory" with exit 2, as it does for std::bad_alloc.
enum class ErrorCode { kOk = 0, kInvalidInput, kNotFound, kIo, kInternal, kOutOfMemory };

class Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status Invalid(std::string message) {
    return Status(ErrorCode::kInvalidInput, std::move(message));
  }
  static Status NotFound(std::string message) {
    return Status(ErrorCode::kNotFound, std::move(message));
  }
  static Status Io(std::string message) { return Status(ErrorCode::kIo, std::move(message)); }
  static Status Internal(std::string message) {
    return Status(ErrorCode::kInternal, std::move(message));
  }
  static Status OutOfMemory(std::string message) {
    return Status(ErrorCode::kOutOfMemory, std::move(message));
  }

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  // One line, suitable for printing after "error: ". Empty when ok().
  const std::string& message() const { return message_; }

  // Returns a copy whose message is "prefix: message" (for adding the file or key).
  Status WithContext(const std::string& prefix) const {
    if (ok()) return *this;
    return Status(code_, prefix + ": " + message_);
  }

 private:
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

// Either a value or a non-ok Status.
template <typename T>
class Result {
 public:
  Result(T value) : data_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : data_(std::move(status)) {}  // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(data_); }
  // REQUIRES: !ok()
  const Status& status() const { return std::get<Status>(data_); }
  // REQUIRES: ok()
  const T& value() const& { return std::get<T>(data_); }
  T& value() & { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  std::variant<T, Status> data_;
};

}  // namespace meshplan

// Propagates a non-ok Status from an expression returning Status.
#define MESHPLAN_RETURN_IF_ERROR(expr) \
  do {                                 \
    ::meshplan::Status _st = (expr);   \
    if (!_st.ok()) return _st;         \
  } while (0)

// Evaluates `expr` (a Result<T>); on error returns its Status from the enclosing function, else
// moves the value into `lhs` (a declaration such as `auto text` or an existing variable):
//   MESHPLAN_ASSIGN_OR_RETURN(auto text, ReadTextFile(path));
// Expands to more than one statement: not for the body of an unbraced if or loop.
#define MESHPLAN_ASSIGN_OR_RETURN(lhs, expr) \
  MESHPLAN_ASSIGN_OR_RETURN_IMPL(MESHPLAN_STATUS_CONCAT(meshplan_result_, __LINE__), lhs, expr)
#define MESHPLAN_ASSIGN_OR_RETURN_IMPL(result, lhs, expr) \
  auto result = (expr);                                   \
  if (!result.ok()) return result.status();               \
  lhs = std::move(result).value()
#define MESHPLAN_STATUS_CONCAT(a, b) MESHPLAN_STATUS_CONCAT_INNER(a, b)
#define MESHPLAN_STATUS_CONCAT_INNER(a, b) a##b
