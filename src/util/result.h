// Result<T>: a value or an Error carrying context. Library functions return these; only `main`
// turns an Error into an exit code (STYLE.md item 9). Expected failures are data, not exceptions.
#pragma once

#include <cassert>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace stitch {

// What kind of failure an Error is. Library code says which when it knows; only `main` maps a kind
// to an exit code (README: 0 success, 1 the work failed, 2 bad input). Nobody classifies an error by
// its message.
enum class ErrorKind : uint8_t {
  work_failed,  // the work itself failed (a task that does not capture, a plan refused): exit 1
  bad_input,    // the input is not what was asked for (not a task, a corrupt file, bad options): 2
  machine,      // this machine cannot do it (no GPU, no nvcc, out of disk, a child not started): 1
};

struct Error {
  std::string message;  // one line, names the file/object and the problem
  ErrorKind kind = ErrorKind::work_failed;

  // Prepends context ("loading graph.json: ") so errors read outermost-first; keeps the kind.
  Error with_context(const std::string& context) const {
    return Error{context + ": " + message, kind};
  }
  Error with_kind(ErrorKind new_kind) const { return Error{message, new_kind}; }
};

template <typename... Args>
Error make_error(fmt::format_string<Args...> format, Args&&... args) {
  return Error{fmt::format(format, std::forward<Args>(args)...)};
}

template <typename... Args>
Error make_error(ErrorKind kind, fmt::format_string<Args...> format, Args&&... args) {
  return Error{fmt::format(format, std::forward<Args>(args)...), kind};
}

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Error error) : data_(std::move(error)) {}  // NOLINT

  bool ok() const { return data_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { assert(ok()); return std::get<0>(data_); }
  const T& value() const& { assert(ok()); return std::get<0>(data_); }
  T&& value() && { assert(ok()); return std::get<0>(std::move(data_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { assert(!ok()); return std::get<1>(data_); }

 private:
  std::variant<T, Error> data_;
};

// Result<void>: success or an Error.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { assert(!ok_); return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

using Status = Result<void>;

}  // namespace stitch

// Propagates an error from an expression returning Result<...>/Status.
#define STITCH_TRY(expr)                                    \
  do {                                                      \
    auto&& stitch_try_result_ = (expr);                     \
    if (!stitch_try_result_.ok()) return stitch_try_result_.error(); \
  } while (0)

#define STITCH_CONCAT_INNER_(a, b) a##b
#define STITCH_CONCAT_(a, b) STITCH_CONCAT_INNER_(a, b)

// STITCH_ASSIGN_OR_RETURN(auto graph, load_graph(path));
#define STITCH_ASSIGN_OR_RETURN(lhs, expr)                              \
  auto STITCH_CONCAT_(stitch_result_, __LINE__) = (expr);               \
  if (!STITCH_CONCAT_(stitch_result_, __LINE__).ok())                   \
    return STITCH_CONCAT_(stitch_result_, __LINE__).error();            \
  lhs = std::move(STITCH_CONCAT_(stitch_result_, __LINE__)).value()
