// The exception classes (named as onnxruntime.capi.onnxruntime_pybind11_state names them, so
// `except ort.InvalidArgument` keeps working) and the kinds of open errors.
#include "errors.h"

#include <sys/stat.h>

namespace systolic::py {
namespace {

namespace pyb = pybind11;

// Created once and never freed: the translator may run until the interpreter exits.
PyObject* classes[8] = {};

PyObject* make(pyb::module_& m, const char* name, PyObject* base, const char* doc) {
  const std::string full = std::string("systolic.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(full.c_str(), doc, base, nullptr);
  if (!cls) throw pyb::error_already_set();
  m.add_object(name, pyb::handle(cls));  // add_object takes its own reference
  return cls;
}

bool contains(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }
bool starts(const std::string& s, const char* what) { return s.rfind(what, 0) == 0; }

}  // namespace

Kind open_error_kind(const std::string& path, const Status& st) {
  std::string msg = st.message();
  if (starts(msg, (path + ": ").c_str())) msg = msg.substr(path.size() + 2);  // what is wrong with the file
  struct stat sb;
  if (stat(path.c_str(), &sb) != 0 || contains(msg, "cannot open model file")) return Kind::no_such_file;
  if (contains(msg, "unsupported") || contains(msg, "not supported"))
    return Kind::not_implemented;
  if (contains(msg, "not a valid ONNX model") || contains(msg, "model is empty")) return Kind::invalid_protobuf;
  // Options checked before the file is read, and bound shapes that contradict the model.
  for (const char* p : {"precision '", "batch ", "threads ", "preprocess '", "shape ", "input ", "calibration", "--"})
    if (starts(msg, p)) return Kind::invalid_argument;
  return Kind::invalid_graph;
}

void register_errors(pyb::module_& m) {
  PyObject* base = make(m, "Error", PyExc_RuntimeError, "Any error systolic reports; the message is the CLI's.");
  classes[static_cast<int>(Kind::fail)] = make(m, "Fail", base, "A failure with no more specific class.");
  PyObject* inv = make(m, "InvalidArgument", base, "A bad argument, input name, dtype or shape.");
  classes[static_cast<int>(Kind::invalid_argument)] = inv;
  classes[static_cast<int>(Kind::shape_mismatch)] =
      make(m, "_ShapeMismatch", inv, "An input's shape differs from the one the model was compiled for.");
  classes[static_cast<int>(Kind::no_such_file)] = make(m, "NoSuchFile", base, "The model file does not exist.");
  classes[static_cast<int>(Kind::invalid_protobuf)] =
      make(m, "InvalidProtobuf", base, "The file is not a valid ONNX model (or plan).");
  classes[static_cast<int>(Kind::invalid_graph)] = make(m, "InvalidGraph", base, "The model could not be compiled.");
  classes[static_cast<int>(Kind::not_implemented)] =
      make(m, "NotImplemented", base, "An operator, type or option systolic does not support.");
  classes[static_cast<int>(Kind::runtime_exception)] =
      make(m, "RuntimeException", base, "A failure while running a model.");
  pyb::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const PyError& e) {
      PyErr_SetString(classes[static_cast<int>(e.kind)], e.what());
    }
  });
}

}  // namespace systolic::py
