// Status and Expected<T>: errors as values at library boundaries.
#pragma once
#include <cstdio>
#include <string>
#include <utility>
#include <variant>

namespace systolic {

class Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status Error(std::string msg) {
    Status s;
    s.msg_ = std::move(msg);
    s.failed_ = true;
    return s;
  }
  bool ok() const { return !failed_; }
  const std::string& message() const { return msg_; }

 private:
  std::string msg_;
  bool failed_ = false;
};

// printf-style error constructor: Err("input %s: bad shape", name).
template <typename... Args>
Status Err(const char* fmt, Args... args) {
  if constexpr (sizeof...(Args) == 0) {
    return Status::Error(fmt);
  } else {
    int n = std::snprintf(nullptr, 0, fmt, args...);
    std::string s(n > 0 ? n : 0, '\0');
    std::snprintf(s.data(), s.size() + 1, fmt, args...);
    return Status::Error(std::move(s));
  }
}

template <typename T>
class Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}
  Expected(Status error) : v_(std::move(error)) {}
  bool ok() const { return v_.index() == 0; }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  Status status() const { return ok() ? Status::Ok() : std::get<1>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace systolic

#define SYSTOLIC_RETURN_IF_ERROR(expr)  \
  do {                                  \
    ::systolic::Status _st = (expr);    \
    if (!_st.ok()) return _st;          \
  } while (0)
