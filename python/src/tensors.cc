// Input checks happen here, before any pointer reaches the library: a wrong dtype or shape is an
// exception, never a read past a buffer.
#include "tensors.h"

#include "errors.h"

namespace systolic::py {
namespace {

namespace pyb = pybind11;

// Whether numpy's dtype `d` stores exactly the bytes of `t` on this (little-endian) machine.
bool matches(const pyb::dtype& d, DType t) {
  const char bo = d.byteorder();
  if (bo == '>') return false;
  const char k = d.kind();
  const auto n = d.itemsize();
  switch (t) {
    case DType::f32: return k == 'f' && n == 4;
    case DType::f64: return k == 'f' && n == 8;
    case DType::f16: return k == 'f' && n == 2;
    case DType::bf16: return k == 'u' && n == 2;
    case DType::u8: return k == 'u' && n == 1;
    case DType::u16: return k == 'u' && n == 2;
    case DType::u32: return k == 'u' && n == 4;
    case DType::u64: return k == 'u' && n == 8;
    case DType::i8: return k == 'i' && n == 1;
    case DType::i16: return k == 'i' && n == 2;
    case DType::i32: return k == 'i' && n == 4;
    case DType::i64: return k == 'i' && n == 8;
    case DType::boolean: return k == 'b' && n == 1;
    default: return false;
  }
}

std::string array_str(const pyb::array& a) {
  std::string s = pyb::str(a.dtype()).cast<std::string>() + "[";
  for (pyb::ssize_t d = 0; d < a.ndim(); ++d) s += (d ? "," : "") + std::to_string(a.shape(d));
  return s + "]";
}

bool same_shape(const pyb::array& a, const std::vector<int64_t>& shape) {
  if (a.ndim() != static_cast<pyb::ssize_t>(shape.size())) return false;
  for (std::size_t d = 0; d < shape.size(); ++d)
    if (a.shape(d) != shape[d]) return false;
  return true;
}

[[noreturn]] void unknown_name(const pyb::dict& feed, const std::vector<TensorSpec>& specs) {
  std::string names;
  for (const TensorSpec& s : specs) names += (names.empty() ? "" : ", ") + s.name;
  for (auto item : feed) {
    if (!pyb::isinstance<pyb::str>(item.first))
      raise(Kind::invalid_argument, "input names must be strings, got " +
                                        pyb::str(pyb::type::handle_of(item.first).attr("__name__")).cast<std::string>());
    const std::string key = item.first.cast<std::string>();
    bool known = false;
    for (const TensorSpec& s : specs) known = known || s.name == key;
    if (!known) raise(Kind::invalid_argument, "the model has no input named '" + key + "' (inputs: " + names + ")");
  }
  raise(Kind::invalid_argument, "the input feed does not match the model's inputs (" + names + ")");
}

}  // namespace

pyb::dtype numpy_dtype(DType t) {
  if (t == DType::bf16) return pyb::dtype("uint16");
  return pyb::dtype(dtype_name(t));
}

std::string spec_str(DType t, const std::vector<int64_t>& shape) {
  std::string s = std::string(dtype_name(t)) + "[";
  for (std::size_t d = 0; d < shape.size(); ++d) s += (d ? "," : "") + std::to_string(shape[d]);
  return s + "]";
}

std::vector<pyb::array> gather_inputs(const pyb::dict& feed, const std::vector<TensorSpec>& specs,
                                      const std::vector<pyb::str>& names) {
  if (static_cast<std::size_t>(PyDict_Size(feed.ptr())) > specs.size()) unknown_name(feed, specs);
  std::vector<pyb::array> arrays;
  arrays.reserve(specs.size());
  for (std::size_t k = 0; k < specs.size(); ++k) {
    const TensorSpec& spec = specs[k];
    PyObject* v = PyDict_GetItemWithError(feed.ptr(), names[k].ptr());  // borrowed
    if (!v) {
      if (PyErr_Occurred()) throw pyb::error_already_set();
      if (static_cast<std::size_t>(PyDict_Size(feed.ptr())) == specs.size()) unknown_name(feed, specs);
      raise(Kind::invalid_argument, "input '" + spec.name + "' was not given");
    }
    pyb::array a;
    if (pyb::isinstance<pyb::array>(v)) {
      a = pyb::reinterpret_borrow<pyb::array>(v);
      if (!matches(a.dtype(), spec.dtype))
        raise(Kind::invalid_argument, "input '" + spec.name + "': expected " + spec_str(spec.dtype, spec.shape) +
                                          ", got " + array_str(a));
    } else {
      // A list or scalar, as ORT accepts it: converted to the input's dtype.
      try {
        a = pyb::module_::import("numpy").attr("asarray")(pyb::handle(v), numpy_dtype(spec.dtype));
      } catch (pyb::error_already_set& e) {
        raise(Kind::invalid_argument, "input '" + spec.name + "': expected " + spec_str(spec.dtype, spec.shape) +
                                          ", got " + pyb::str(pyb::type::handle_of(v).attr("__name__")).cast<std::string>() +
                                          " (" + e.what() + ")");
      }
    }
    if (!same_shape(a, spec.shape))
      raise(Kind::shape_mismatch,
            "input '" + spec.name + "': expected " + spec_str(spec.dtype, spec.shape) + ", got " + array_str(a));
    if (!(a.flags() & pyb::array::c_style)) {
      a = pyb::array::ensure(a, pyb::array::c_style);
      if (!a) raise(Kind::invalid_argument, "input '" + spec.name + "': could not make a contiguous copy");
    }
    arrays.push_back(std::move(a));
  }
  return arrays;
}

}  // namespace systolic::py
