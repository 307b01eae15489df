// Model::open: a .plan read and checked against the options, or an .onnx compiled through the
// compile cache; the saved `systolic tune` recommendation as the default batch, threads and
// instances; the input and output specs, FLOPs and image preprocessing read from the plan.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>

#include "api/compile_cache.h"
#include "api/impl.h"
#include "api/internal.h"
#include "api/precision.h"
#include "api/tune_store.h"
#include "base/cpu.h"

namespace systolic {

struct ModelAccess {
  static std::shared_ptr<Model> make(std::shared_ptr<Model::Impl> impl) {
    auto m = std::make_shared<Model>();
    m->impl_ = std::move(impl);
    return m;
  }
};

namespace api {
namespace {

using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

// The batch a compile uses: `batch` when given (> 0); else the leading dim of a bound shape; else 1.
Expected<int64_t> batch_with_shapes(int64_t batch, const std::map<std::string, ir::Shape>& shapes) {
  if (shapes.empty()) return batch > 0 ? batch : 1;
  const auto& [name, shape] = *shapes.begin();
  if (shape.empty() || shape[0] < 1) return Err("shape %s=%s: dims must be positive", name.c_str(), ir::shape_str(shape).c_str());
  if (batch > 0 && batch != shape[0])
    return Err("batch %lld contradicts shape %s=%s (leading dim %lld)", static_cast<long long>(batch), name.c_str(),
               ir::shape_str(shape).c_str(), static_cast<long long>(shape[0]));
  return shape[0];
}

Expected<ir::ImagePreprocess> preprocess_of(const ModelOptions& opts, const OpenExtras& extras) {
  if (extras.preprocess) return *extras.preprocess;
  if (opts.preprocess.empty()) return ir::ImagePreprocess();
  if (opts.preprocess == "imagenet") return ir::imagenet_preprocess();
  return Err("preprocess '%s': unknown; accepted: \"imagenet\" (uint8 RGB images in), or empty (tensors in)",
             opts.preprocess.c_str());
}

Expected<std::shared_ptr<const plan::Program>> load_plan(const std::string& path, const ModelOptions& opts,
                                                         const ir::ImagePreprocess& pre, const PrecisionRequest& pr) {
  auto p = plan::load_program(path);
  if (!p.ok()) return p.status();
  if (opts.batch > 0 && opts.batch != (*p)->batch)
    return Err("%s was compiled for batch %lld; recompile it for batch %lld", path.c_str(),
               static_cast<long long>((*p)->batch), static_cast<long long>(opts.batch));
  if (opts.micro_batch > 0 && opts.micro_batch != (*p)->micro_batch)
    return Err("%s runs its batch as runs of %lld (fixed when it was compiled); recompile the .onnx with micro-batch %lld",
               path.c_str(), static_cast<long long>((*p)->micro_batch), static_cast<long long>(opts.micro_batch));
  if (pre.enabled())
    return Err("%s is a compiled plan: its preprocessing was fixed at compile time (%s); drop the "
               "preprocessing flags or pass the .onnx", path.c_str(),
               (*p)->preprocess.enabled() ? "with image input" : "without");
  SYSTOLIC_RETURN_IF_ERROR(check_plan_precision(pr, **p, path));
  for (const auto& [name, shape] : opts.shapes) {
    const ir::Graph& g = (*p)->graph;
    bool match = false;
    for (int id : g.inputs) match = match || (g.t(id).name == name && plan::batch_shape(**p, g.t(id).shape) == shape);
    if (!match)
      return Err("%s is a compiled plan whose inputs do not include %s%s; recompile the .onnx with that --shape",
                 path.c_str(), name.c_str(), ir::shape_str(shape).c_str());
  }
  return std::shared_ptr<const plan::Program>(*p);
}

// An input as runtime::Session takes it: NHWC where the plan stores it so (an image input).
TensorSpec input_spec(const plan::Program& p, const ir::Tensor& t) {
  ir::Shape shape = t.shape;
  if (t.layout == ir::Layout::nhwc && shape.size() == 4) shape = {shape[0], shape[2], shape[3], shape[1]};
  return {t.name, static_cast<DType>(t.dtype), plan::batch_shape(p, std::move(shape))};
}

}  // namespace

bool is_plan_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char magic[8] = {};
  f.read(magic, 8);
  return f.gcount() == 8 && std::string(magic, 8) == "SYSTPLAN";
}

Expected<std::shared_ptr<Model>> wrap_program(std::shared_ptr<const plan::Program> program, const std::string& path,
                                              const ModelOptions& opts, LoadReport report) {
  if (!program) return Err("%s: no program", path.c_str());
  if (opts.threads < 0 || opts.instances < 0)
    return Err("threads %d, instances %d: must be positive (or 0 for the default)", opts.threads, opts.instances);
  auto impl = std::make_shared<Model::Impl>();
  impl->path = path;
  impl->program = program;
  impl->report = std::move(report);
  // The specs as runtime::Session gives them (its inputs() and outputs()).
  const ir::Graph& g = program->graph;
  for (int id : g.inputs) impl->inputs.push_back(input_spec(*program, g.t(id)));
  const ir::Graph& og = plan::output_graph(*program);
  for (int id : og.outputs)
    impl->outputs.push_back({og.t(id).name, static_cast<DType>(og.t(id).dtype),
                             plan::batch_shape(*program, plan::output_spec_shape(og.t(id)))});
  impl->threads = opts.threads > 0 ? opts.threads : std::max(1, host_cpu().cores);
  impl->instances = opts.instances > 0 ? opts.instances : 1;
  const ir::ImagePreprocess& pp = program->preprocess;
  if (pp.enabled() && !impl->inputs.empty()) {
    const std::vector<int64_t>& nhwc = impl->inputs[0].shape;
    ImageSpec& im = impl->image;
    im.crop_h = pp.crop_h > 0 ? pp.crop_h : nhwc.size() == 4 ? static_cast<int>(nhwc[1]) : 0;
    im.crop_w = pp.crop_w > 0 ? pp.crop_w : nhwc.size() == 4 ? static_cast<int>(nhwc[2]) : 0;
    // 0: ImageNet's ratio, as the compiler resolves it (passes/bind_preprocess.cc).
    im.resize = pp.resize > 0 ? pp.resize : static_cast<int>(std::lround(std::max(im.crop_h, im.crop_w) / 0.875));
    im.mean = pp.mean;
    im.std = pp.std;
  }
  return ModelAccess::make(std::move(impl));
}

Expected<std::shared_ptr<Model>> open_model(const std::string& path, const ModelOptions& opts, const OpenExtras& extras) {
  if (opts.batch < 0 || opts.threads < 0 || opts.instances < 0)
    return Err("batch %lld, threads %d, instances %d: each must be positive (or 0 for the default)",
               static_cast<long long>(opts.batch), opts.threads, opts.instances);
  if (!opts.precision.empty() && opts.precision != "fp32" && opts.precision != "bf16" && opts.precision != "int8")
    return Err("precision '%s': expected fp32, bf16 or int8 (or empty for automatic)", opts.precision.c_str());
  auto pre = preprocess_of(opts, extras);
  if (!pre.ok()) return pre.status();
  LoadReport rep;
  auto note = [&rep, &extras](const std::string& n) {
    rep.notes.push_back(n);
    if (extras.note) extras.note(n);
  };

  // The tuned recommendation fills what was left at 0.
  ModelOptions o = opts;
  bool tuned_batch = false;
  if (o.use_tuned && (o.batch == 0 || o.threads == 0 || o.instances == 0)) {
    auto t = load_tuned(path, model_precision(path, o.precision));
    if (!t.ok()) {
      note("ignoring the tuned configuration: " + t.status().message());
    } else if (*t) {
      const TunedConfig& c = **t;
      if (o.batch == 0 && o.shapes.empty()) {
        o.batch = c.batch;
        tuned_batch = true;
      }
      if (o.threads == 0) o.threads = c.threads;
      if (o.instances == 0) o.instances = c.instances;
      rep.tuned_path = c.path;
    }
  }

  PrecisionRequest pr;
  pr.precision = o.precision;
  pr.calibration = o.calibration;
  pr.method = o.calibration_method;
  pr.keep_fp32 = o.keep_fp32;
  pr.progress = extras.progress;
  // Calibration runs inside the compile, while `rep` is alive.
  pr.note = note;

  std::shared_ptr<const plan::Program> program;
  if (is_plan_file(path)) {
    const auto t0 = clock_type::now();
    ModelOptions checked = o;
    if (tuned_batch) checked.batch = 0;  // a plan's batch is its own; the tuned one was for another
    auto p = load_plan(path, checked, *pre, pr);
    if (!p.ok()) return p.status();
    program = *p;
    rep.load_ms = ms_since(t0);
  } else {
    plan::CompileOptions co;
    auto batch = batch_with_shapes(o.batch, o.shapes);
    if (!batch.ok()) return batch.status();
    co.batch = *batch;
    co.micro_batch = o.micro_batch;
    co.input_shapes = o.shapes;
    co.optimize = extras.optimize;
    co.preprocess = *pre;
    SYSTOLIC_RETURN_IF_ERROR(apply_precision(pr, *pre, &co));
    auto r = compile_onnx_cached(path, co, o.use_cache ? default_cache_dir() : "");
    if (!r.ok()) return r.status();
    program = r->program;
    rep.compiled = true;
    rep.cache_hit = r->hit;
    rep.cache_path = r->path;
    rep.note = r->note;
    rep.compile_ms = r->compile_ms;
    rep.load_ms = r->load_ms;
  }
  return wrap_program(std::move(program), path, o, std::move(rep));
}

std::shared_ptr<const plan::Program> program(const Model& m) { return m.impl().program; }

}  // namespace api

Expected<std::shared_ptr<Model>> Model::open(const std::string& path, const ModelOptions& opts) {
  return api::open_model(path, opts, {});
}

const std::string& Model::path() const { return impl_->path; }
const std::vector<TensorSpec>& Model::inputs() const { return impl_->inputs; }
const std::vector<TensorSpec>& Model::outputs() const { return impl_->outputs; }
int64_t Model::batch() const { return impl_->program->batch; }
const std::string& Model::precision() const { return impl_->program->precision; }
int Model::threads() const { return impl_->threads; }
int Model::instances() const { return impl_->instances; }
bool Model::image_input() const { return impl_->program->preprocess.enabled(); }
const ImageSpec& Model::image() const { return impl_->image; }
const LoadReport& Model::report() const { return impl_->report; }
double Model::flops() const {
  std::call_once(impl_->flops_once, [&] {
    runtime::SessionOptions so;
    so.threads = 1;
    auto s = runtime::Session::create(impl_->program, so);
    if (s.ok()) impl_->flops = (*s)->flops();
  });
  return impl_->flops;
}

Status Model::save(const std::string& plan_path) const { return plan::save_program(*impl_->program, plan_path); }

}  // namespace systolic
