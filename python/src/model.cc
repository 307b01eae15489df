// systolic._native.Model and open(): the library's Model::open with every ModelOptions field,
// the specs and load report as Python values, run(), save(), and a timing helper for the
// overhead benchmark (Session::run alone, no Python in the loop).
#include "model.h"

#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "errors.h"
#include "tensors.h"

namespace systolic::py {

namespace pyb = pybind11;

PyModel::PyModel(std::shared_ptr<Model> model) : model_(std::move(model)) {
  for (const TensorSpec& s : model_->inputs()) names_.emplace_back(s.name);
  for (const TensorSpec& s : model_->outputs()) {
    out_dtypes_.push_back(numpy_dtype(s.dtype));
    out_shapes_.emplace_back(s.shape.begin(), s.shape.end());
  }
}

Expected<std::unique_ptr<Session>> PyModel::acquire() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      auto s = std::move(idle_.back());
      idle_.pop_back();
      return s;
    }
  }
  return model_->new_session();
}

void PyModel::release(std::unique_ptr<Session> s) {
  std::lock_guard<std::mutex> lock(mu_);
  idle_.push_back(std::move(s));
}

pyb::list PyModel::run(const pyb::object& feed) {
  if (!PyDict_Check(feed.ptr())) raise(Kind::invalid_argument, "the input feed must be a dict of input name -> array");
  const std::vector<pyb::array> arrays =
      gather_inputs(pyb::reinterpret_borrow<pyb::dict>(feed), model_->inputs(), names_);
  std::vector<const void*> in(arrays.size());
  for (std::size_t k = 0; k < arrays.size(); ++k) in[k] = arrays[k].data();
  bool dynamic = false;
  for (const TensorSpec& o : model_->outputs()) dynamic = dynamic || o.elements() < 0;
  if (dynamic) return run_dynamic(arrays);
  pyb::list result(out_dtypes_.size());
  std::vector<void*> out(out_dtypes_.size());
  for (std::size_t k = 0; k < out.size(); ++k) {
    pyb::array a(out_dtypes_[k], out_shapes_[k]);
    out[k] = a.mutable_data();
    result[k] = std::move(a);
  }
  Status st;
  {
    pyb::gil_scoped_release nogil;
    auto s = acquire();
    if (!s.ok()) {
      st = s.status();
    } else {
      st = (*s)->run(in, out);
      release(std::move(*s));
    }
  }
  check(st, Kind::runtime_exception);
  return result;
}

// Outputs shaped by the run (a plan's dynamic tail: detections): the allocating Session::run.
pyb::list PyModel::run_dynamic(const std::vector<pyb::array>& arrays) {
  std::vector<std::pair<std::string, Tensor>> named;
  for (std::size_t k = 0; k < arrays.size(); ++k) {
    const TensorSpec& spec = model_->inputs()[k];
    const auto* p = static_cast<const uint8_t*>(arrays[k].data());
    named.emplace_back(spec.name, Tensor{spec.dtype, spec.shape, std::vector<uint8_t>(p, p + spec.bytes())});
  }
  Expected<std::vector<Tensor>> r = Err("the model did not run");
  {
    pyb::gil_scoped_release nogil;
    auto s = acquire();
    if (!s.ok()) {
      r = s.status();
    } else {
      r = (*s)->run(named);
      release(std::move(*s));
    }
  }
  check(r.status(), Kind::runtime_exception);
  pyb::list result;
  for (const Tensor& t : *r) {
    pyb::array a(numpy_dtype(t.dtype), std::vector<pyb::ssize_t>(t.shape.begin(), t.shape.end()));
    if (!t.data.empty()) std::memcpy(a.mutable_data(), t.data.data(), t.data.size());
    result.append(std::move(a));
  }
  return result;
}

namespace {

pyb::list specs(const std::vector<TensorSpec>& v) {
  pyb::list l;
  for (const TensorSpec& s : v) l.append(pyb::make_tuple(s.name, numpy_dtype(s.dtype), pyb::tuple(pyb::cast(s.shape))));
  return l;
}

pyb::dict report(const LoadReport& r) {
  pyb::dict d;
  d["compiled"] = r.compiled;
  d["cache_hit"] = r.cache_hit;
  d["cache_path"] = r.cache_path;
  d["note"] = r.note;
  d["compile_ms"] = r.compile_ms;
  d["load_ms"] = r.load_ms;
  d["tuned_path"] = r.tuned_path;
  d["notes"] = r.notes;
  return d;
}

// Microseconds per Session::run call on zero inputs, `iters` times after a warm-up: what the
// Python call adds is measured against this.
std::vector<double> time_native_run(PyModel& pm, int iters) {
  if (iters < 1) raise(Kind::invalid_argument, "iters must be at least 1");
  const Model& m = pm.model();
  std::vector<std::vector<uint8_t>> ib, ob;
  std::vector<const void*> in;
  std::vector<void*> out;
  for (const TensorSpec& s : m.inputs()) ib.emplace_back(s.bytes());
  for (const TensorSpec& s : m.outputs()) ob.emplace_back(s.bytes());
  for (auto& b : ib) in.push_back(b.data());
  for (auto& b : ob) out.push_back(b.data());
  std::vector<double> us;
  us.reserve(iters);
  Status st;
  {
    pyb::gil_scoped_release nogil;
    auto s = pm.acquire();
    if (!s.ok()) {
      st = s.status();
    } else {
      for (int i = 0; i < std::min(iters, 50) && st.ok(); ++i) st = (*s)->run(in, out);
      for (int i = 0; i < iters && st.ok(); ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        st = (*s)->run(in, out);
        us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
      }
      pm.release(std::move(*s));
    }
  }
  check(st, Kind::runtime_exception);
  return us;
}

}  // namespace

void register_model(pyb::module_& m) {
  pyb::class_<PyModel, std::shared_ptr<PyModel>>(m, "Model", "A compiled model (systolic::Model) and its sessions.")
      .def_property_readonly("path", [](const PyModel& p) { return p.model().path(); })
      .def_property_readonly("inputs", [](const PyModel& p) { return specs(p.model().inputs()); },
                             "[(name, dtype, shape)] as run() takes them")
      .def_property_readonly("outputs", [](const PyModel& p) { return specs(p.model().outputs()); })
      .def_property_readonly("batch", [](const PyModel& p) { return p.model().batch(); })
      .def_property_readonly("precision", [](const PyModel& p) { return p.model().precision(); })
      .def_property_readonly("threads", [](const PyModel& p) { return p.model().threads(); })
      .def_property_readonly("instances", [](const PyModel& p) { return p.model().instances(); })
      .def_property_readonly("image_input", [](const PyModel& p) { return p.model().image_input(); })
      .def_property_readonly("image",
                             [](const PyModel& p) {
                               const ImageSpec& im = p.model().image();
                               pyb::dict d;
                               d["resize"] = im.resize;
                               d["crop"] = pyb::make_tuple(im.crop_h, im.crop_w);
                               d["mean"] = im.mean;
                               d["std"] = im.std;
                               return d;
                             })
      .def_property_readonly("report", [](const PyModel& p) { return report(p.model().report()); })
      .def("flops", [](const PyModel& p) {
        pyb::gil_scoped_release nogil;
        return p.model().flops();
      })
      .def("run", &PyModel::run, pyb::arg("feed"), "outputs in the model's order for a dict of input arrays")
      .def("save",
           [](const PyModel& p, const std::string& path) {
             Status st;
             {
               pyb::gil_scoped_release nogil;
               st = p.model().save(path);
             }
             check(st, Kind::fail);
           },
           pyb::arg("plan_path"))
      .def("_time_native_run", &time_native_run, pyb::arg("iters"));

  m.def(
      "open",
      [](const std::string& path, const std::string& precision, int64_t batch, int threads, int instances,
         const std::string& preprocess, const std::map<std::string, std::vector<int64_t>>& shapes, bool use_cache,
         bool use_tuned, const std::vector<std::string>& calibration, const std::string& method,
         const std::vector<std::string>& keep_fp32) {
        ModelOptions o;
        o.precision = precision;
        o.batch = batch;
        o.threads = threads;
        o.instances = instances;
        o.preprocess = preprocess;
        o.shapes = shapes;
        o.use_cache = use_cache;
        o.use_tuned = use_tuned;
        o.calibration = calibration;
        o.calibration_method = method;
        o.keep_fp32 = keep_fp32;
        Expected<std::shared_ptr<Model>> r = Status::Error("not opened");
        {
          pyb::gil_scoped_release nogil;
          r = Model::open(path, o);
        }
        if (!r.ok()) raise(open_error_kind(path, r.status()), r.status().message());
        return std::make_shared<PyModel>(std::move(*r));
      },
      pyb::arg("path"), pyb::arg("precision") = "", pyb::arg("batch") = 0, pyb::arg("threads") = 0,
      pyb::arg("instances") = 0, pyb::arg("preprocess") = "", pyb::arg("shapes") = std::map<std::string, std::vector<int64_t>>{},
      pyb::arg("use_cache") = true, pyb::arg("use_tuned") = true, pyb::arg("calibration") = std::vector<std::string>{},
      pyb::arg("method") = "minmax", pyb::arg("keep_fp32") = std::vector<std::string>{},
      "Model::open: an .onnx compiled through the compile cache, or a .plan");
}

}  // namespace systolic::py
