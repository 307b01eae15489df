// classify's streaming core: image files through the runtime's asynchronous pipeline (decode
// and resize on loader threads, batches run by the model's sessions), each result handed to
// Python as it completes. The pipeline runs on its own thread; Python pulls results without
// holding the GIL while it waits.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <thread>

#include "api/internal.h"
#include "errors.h"
#include "image/image.h"
#include "model.h"
#include "runtime/pipeline.h"

namespace systolic::py {
namespace {

namespace pyb = pybind11;

constexpr std::size_t kMaxQueued = 1024;  // results waiting for Python before the pipeline waits

class ClassifyStream {
 public:
  ClassifyStream(std::shared_ptr<PyModel> model, std::vector<std::string> files, int instances, int loaders, int queue)
      : model_(std::move(model)), files_(std::move(files)) {
    const Model& m = model_->model();
    if (!m.image_input())
      raise(Kind::invalid_argument, m.path() + " takes tensors, not images; compile it with preprocess=\"imagenet\"");
    const TensorSpec& out0 = m.outputs()[0];
    if (out0.dtype != DType::f32 || out0.shape.size() != 2)
      raise(Kind::invalid_argument, m.path() + ": output " + out0.name + " is " + dtype_name(out0.dtype) +
                                        " of rank " + std::to_string(out0.shape.size()) +
                                        "; classify needs [batch, classes] scores");
    if (instances < 1 || loaders < 1 || loaders > 256 || queue < 1)
      raise(Kind::invalid_argument, "instances and queue must be at least 1, loaders 1 to 256");
    classes_ = out0.shape[1];
    for (int i = 0; i < instances; ++i) {
      auto s = model_->acquire();
      if (!s.ok()) raise(Kind::fail, s.status().message());
      sessions_.push_back(std::move(*s));
    }
    const ImageSpec& im = m.image();
    worker_ = std::thread([this, loaders, queue, spec = image::ResizeCrop{im.resize, im.crop_h, im.crop_w}] {
      std::vector<image::Image> decoded(static_cast<std::size_t>(loaders));
      std::vector<image::Scratch> scratch(static_cast<std::size_t>(loaders));
      auto load = [&](int k, std::size_t item, uint8_t* dst) -> Status {
        if (stop_) return Err("%s: not read (the results were abandoned)", files_[item].c_str());
        image::Image& img = decoded[static_cast<std::size_t>(k)];
        SYSTOLIC_RETURN_IF_ERROR(image::decode_file(files_[item], &img));
        Status st = image::resize_center_crop(img, spec, dst, &scratch[static_cast<std::size_t>(k)]);
        if (!st.ok()) return Err("%s: %s", files_[item].c_str(), st.message().c_str());
        return Status::Ok();
      };
      auto result = [&](std::size_t item, const Status& st, const std::vector<const void*>& rows, double) {
        Item it{item, st.ok() ? "" : st.message(), {}};
        if (st.ok()) {
          const float* row = static_cast<const float*>(rows[0]);
          it.scores.assign(row, row + classes_);
        }
        std::unique_lock<std::mutex> lock(mu_);
        space_.wait(lock, [&] { return stop_ || queued_.size() < kMaxQueued; });
        if (stop_) return;
        queued_.push_back(std::move(it));
        ready_.notify_one();
      };
      std::vector<runtime::Session*> rs;
      for (auto& s : sessions_) rs.push_back(&api::runtime_session(*s));
      runtime::PipelineOptions po;
      po.loaders = loaders;
      po.queue_batches = queue;
      auto rep = runtime::run_pipeline(rs, files_.size(), load, result, po);
      std::lock_guard<std::mutex> lock(mu_);
      if (rep.ok()) report_ = std::move(*rep);
      else status_ = rep.status();
      finished_ = true;
      ready_.notify_all();
    });
  }

  ~ClassifyStream() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      space_.notify_all();
    }
    if (worker_.joinable()) {
      pyb::gil_scoped_release nogil;
      worker_.join();
    }
    for (auto& s : sessions_) model_->release(std::move(s));
  }

  // (item index, error message or None, scores as float32[classes] or None).
  pyb::object next() {
    Item it;
    {
      pyb::gil_scoped_release nogil;
      std::unique_lock<std::mutex> lock(mu_);
      ready_.wait(lock, [&] { return !queued_.empty() || finished_; });
      if (queued_.empty()) {
        if (!status_.ok()) raise(Kind::runtime_exception, status_.message());
        throw pyb::stop_iteration();
      }
      it = std::move(queued_.front());
      queued_.pop_front();
      space_.notify_one();
    }
    if (!it.error.empty()) return pyb::make_tuple(it.item, it.error, pyb::none());
    pyb::array_t<float> scores(static_cast<pyb::ssize_t>(it.scores.size()));
    std::copy(it.scores.begin(), it.scores.end(), scores.mutable_data());
    return pyb::make_tuple(it.item, pyb::none(), scores);
  }

  // The run's figures once every result has been taken (None before).
  pyb::object report() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!finished_ || !status_.ok()) return pyb::none();
    pyb::dict d;
    d["images"] = report_.items;
    d["failed"] = report_.failed;
    d["batches"] = report_.batches;
    d["wall_s"] = report_.wall_s;
    d["latency_ms"] = report_.latency_ms;
    d["threads_per_instance"] = sessions_.empty() ? 0 : api::runtime_session(*sessions_[0]).threads();
    const runtime::StageReport* neck = report_.bottleneck();
    d["bottleneck"] = neck ? neck->name : "";
    pyb::list stages;
    for (const auto& s : report_.stages) {
      pyb::dict st;
      st["name"] = s.name;
      st["threads"] = s.threads;
      st["busy_s"] = s.busy_s;
      st["busy_pct"] = s.busy_pct(report_.wall_s);
      st["work"] = s.work;
      stages.append(st);
    }
    d["stages"] = stages;
    return d;
  }

 private:
  struct Item {
    std::size_t item = 0;
    std::string error;
    std::vector<float> scores;
  };
  std::shared_ptr<PyModel> model_;
  std::vector<std::string> files_;
  std::vector<std::unique_ptr<Session>> sessions_;
  int64_t classes_ = 0;
  std::mutex mu_;
  std::condition_variable ready_, space_;
  std::deque<Item> queued_;
  std::atomic<bool> stop_{false};  // the stream was dropped: skip what is left
  bool finished_ = false;
  Status status_;
  runtime::PipelineReport report_;
  std::thread worker_;
};

}  // namespace

void register_classify(pyb::module_& m) {
  pyb::class_<ClassifyStream>(m, "ClassifyStream", "image files through the pipeline, results as they complete")
      .def(pyb::init<std::shared_ptr<PyModel>, std::vector<std::string>, int, int, int>(), pyb::arg("model"),
           pyb::arg("files"), pyb::arg("instances"), pyb::arg("loaders"), pyb::arg("queue"))
      .def("__iter__", [](pyb::object self) { return self; })
      .def("__next__", &ClassifyStream::next)
      .def("report", &ClassifyStream::report);
  // Whether the first output is a Softmax's (probabilities), else logits to normalise.
  m.def("ends_in_softmax", [](const PyModel& pm) {
    const ir::Graph& g = api::program(pm.model())->graph;
    for (const ir::Node& n : g.nodes)
      for (int id : n.outputs)
        if (!g.outputs.empty() && id == g.outputs[0] && n.op == ir::Op::Softmax) return true;
    return false;
  });
}

}  // namespace systolic::py
