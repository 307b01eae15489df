// numpy arrays as the library's tensors: dtype mapping, and the checked gathering of an input
// feed into buffers run() can read in place.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "systolic/systolic.h"

namespace systolic::py {

// numpy's dtype for a library dtype (bfloat16, which numpy lacks, as its uint16 bits).
pybind11::dtype numpy_dtype(DType t);

// "float32[1,3,224,224]", as the library's messages write a tensor.
std::string spec_str(DType t, const std::vector<int64_t>& shape);

// The arrays to read the model's inputs from, in the model's order: the caller's own arrays when
// they are C-contiguous and of the input's dtype (no copy), else contiguous copies of them;
// values that are not arrays (lists, scalars) are converted to the input's dtype. Unknown or
// missing names and wrong dtypes raise InvalidArgument; a wrong shape raises _ShapeMismatch.
std::vector<pybind11::array> gather_inputs(const pybind11::dict& feed, const std::vector<TensorSpec>& specs,
                                           const std::vector<pybind11::str>& names);

}  // namespace systolic::py
