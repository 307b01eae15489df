// systolic._native: the C++ half of the systolic Python package (python/systolic/ holds the
// Python half: the ONNX Runtime surface and systolic's own API over these bindings).
#include <pybind11/pybind11.h>

#include "errors.h"
#include "model.h"
#include "systolic/systolic.h"
#include "systolic/version.h"

namespace systolic::py {
void register_signature(pybind11::module_& m);
void register_tools(pybind11::module_& m);
void register_classify(pybind11::module_& m);
}  // namespace systolic::py

PYBIND11_MODULE(_native, m) {
  m.doc() = "systolic's library API (include/systolic/systolic.h) for Python";
  m.attr("version") = systolic::kVersion;
  systolic::py::register_errors(m);
  systolic::py::register_model(m);
  systolic::py::register_signature(m);
  systolic::py::register_tools(m);
  systolic::py::register_classify(m);
  m.def("host_info", [] {
    pybind11::gil_scoped_release nogil;
    return systolic::host_info();
  }, "the detected CPU and each precision's measured peak and kernel, as `systolic info` prints it");
}
