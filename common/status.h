// Status and StatusOr<T>: the error values passed across module boundaries.
// Exceptions from third-party libraries are caught in adapters and turned into a Status.
#ifndef DDP_COMMON_STATUS_H_
#define DDP_COMMON_STATUS_H_

#include <optional>
#include <string>
#include <utility>

namespace ddp {

// Codes follow the Kubernetes API's reasons where one fits, so the client maps them 1:1.
enum class StatusCode {
  kOk = 0,
  kInvalidArgument,    // bad input: a manifest, a flag, a config key (422 Invalid)
  kNotFound,           // 404
  kAlreadyExists,      // 409 with reason AlreadyExists
  kConflict,           // 409 with reason Conflict (stale resourceVersion)
  kGone,               // 410: watch resourceVersion too old
  kForbidden,          // 403
  kUnauthenticated,    // 401
  kUnavailable,        // 429, 5xx, connection refused: retry later
  kDeadlineExceeded,   // a timeout
  kFailedPrecondition, // the world is not in the state the call needs
  kDataLoss,           // corrupt or torn data (checkpoints)
  kInternal,           // a bug or an unexpected third-party failure
};

// Thread-compatible value type. A default-constructed Status is OK.
class Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status OK() { return Status(); }
  static Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status AlreadyExists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
  static Status Conflict(std::string m) { return {StatusCode::kConflict, std::move(m)}; }
  static Status Gone(std::string m) { return {StatusCode::kGone, std::move(m)}; }
  static Status Forbidden(std::string m) { return {StatusCode::kForbidden, std::move(m)}; }
  static Status Unauthenticated(std::string m) { return {StatusCode::kUnauthenticated, std::move(m)}; }
  static Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status DeadlineExceeded(std::string m) { return {StatusCode::kDeadlineExceeded, std::move(m)}; }
  static Status FailedPrecondition(std::string m) { return {StatusCode::kFailedPrecondition, std::move(m)}; }
  static Status DataLoss(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "NotFound: pods ml/x-worker-0 not found"; "OK" when ok().
  std::string ToString() const;
  // Same code, message prefixed: Status::NotFound("x").WithContext("get pod") -> "get pod: x".
  Status WithContext(const std::string& context) const;

  bool operator==(const Status& o) const { return code_ == o.code_ && message_ == o.message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

const char* StatusCodeName(StatusCode code);

// Either a value or a non-OK Status. REQUIRES: value() only when ok().
template <typename T>
class StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT
    if (status_.ok()) status_ = Status::Internal("StatusOr constructed from an OK Status");
  }
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  const T& value() const& { return *value_; }
  T& value() & { return *value_; }
  T&& value() && { return std::move(*value_); }
  const T& operator*() const& { return *value_; }
  T& operator*() & { return *value_; }
  const T* operator->() const { return &*value_; }
  T* operator->() { return &*value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace ddp

// Returns early with the Status of `expr` when it is not OK.
#define DDP_RETURN_IF_ERROR(expr)                 \
  do {                                            \
    ::ddp::Status ddp_status_ = (expr);           \
    if (!ddp_status_.ok()) return ddp_status_;    \
  } while (0)

#endif  // DDP_COMMON_STATUS_H_
