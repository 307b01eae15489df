// A Model as Python holds it: the library's Model and a pool of its Sessions, so concurrent
// run() calls from Python threads each get a session of their own (sessions share weights).
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <mutex>
#include <vector>

#include "systolic/systolic.h"

namespace systolic::py {

class PyModel {
 public:
  explicit PyModel(std::shared_ptr<Model> model);
  const Model& model() const { return *model_; }
  const std::shared_ptr<Model>& shared() const { return model_; }

  // Outputs in the model's order, as arrays allocated for this call (the caller keeps them);
  // the GIL is released while the model runs.
  pybind11::list run(const pybind11::object& feed);
  pybind11::list run_dynamic(const std::vector<pybind11::array>& arrays);

  // A session from the pool (a new one when all are busy) and back; callable without the GIL.
  Expected<std::unique_ptr<Session>> acquire();
  void release(std::unique_ptr<Session> s);

 private:
  std::shared_ptr<Model> model_;
  std::vector<pybind11::str> names_;  // input names as dict keys
  std::vector<pybind11::dtype> out_dtypes_;
  std::vector<std::vector<pybind11::ssize_t>> out_shapes_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Session>> idle_;
};

void register_model(pybind11::module_& m);

}  // namespace systolic::py
