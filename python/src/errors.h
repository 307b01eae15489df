// Errors raised to Python: systolic.Error and its ONNX Runtime-named subclasses. C++ code throws
// PyError (any thread, GIL or not); a translator raises the matching Python class.
#pragma once
#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>

#include "systolic/status.h"

namespace systolic::py {

enum class Kind {
  fail,              // anything else (ORT's Fail)
  invalid_argument,  // a bad argument or input feed
  shape_mismatch,    // an input's shape differs from the compiled one (an InvalidArgument)
  no_such_file,
  invalid_protobuf,  // not an ONNX file, or truncated
  invalid_graph,     // a model systolic could read but not compile
  not_implemented,   // an op, type or option systolic does not support
  runtime_exception, // a failure while running
};

struct PyError : std::runtime_error {
  PyError(Kind k, const std::string& msg) : std::runtime_error(msg), kind(k) {}
  Kind kind;
};

[[noreturn]] inline void raise(Kind k, const std::string& msg) { throw PyError(k, msg); }

// The kind of a failed Model::open of `path`, from what the library's message says.
Kind open_error_kind(const std::string& path, const Status& st);

// Throws the status as `kind` when it failed.
inline void check(const Status& st, Kind kind) {
  if (!st.ok()) raise(kind, st.message());
}

void register_errors(pybind11::module_& m);

}  // namespace systolic::py
