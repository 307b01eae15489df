// Session: a runtime session of a Model's program, with the public API's checks in front.
#include <cstring>

#include "api/impl.h"
#include "api/internal.h"

namespace systolic {
namespace {

std::string spec_str(DType t, const std::vector<int64_t>& shape) {
  return std::string(dtype_name(t)) + ir::shape_str(shape);
}

}  // namespace

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

const std::vector<TensorSpec>& Session::inputs() const { return impl_->model->inputs; }
const std::vector<TensorSpec>& Session::outputs() const { return impl_->model->outputs; }

Expected<std::unique_ptr<Session>> Model::new_session(int threads) const {
  if (threads < 0) return Err("threads %d: must be positive (or 0 for the model's)", threads);
  runtime::SessionOptions so;
  so.threads = threads > 0 ? threads : impl_->threads;
  auto s = runtime::Session::create(impl_->program, so);
  if (!s.ok()) return Err("%s: %s", impl_->path.c_str(), s.status().message().c_str());
  auto impl = std::make_unique<Session::Impl>();
  impl->model = impl_;
  impl->session = std::move(*s);
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

Status Session::run(const std::vector<const void*>& inputs, const std::vector<void*>& outputs) {
  const auto& ins = impl_->model->inputs;
  const auto& outs = impl_->model->outputs;
  if (inputs.size() != ins.size() || outputs.size() != outs.size())
    return Err("run: the model has %zu input(s) and %zu output(s); got %zu and %zu buffers", ins.size(), outs.size(),
               inputs.size(), outputs.size());
  for (std::size_t k = 0; k < ins.size(); ++k)
    if (!inputs[k] && ins[k].bytes() > 0) return Err("run: input '%s' is a null buffer", ins[k].name.c_str());
  for (std::size_t k = 0; k < outs.size(); ++k)
    if (!outputs[k] && outs[k].bytes() > 0) return Err("run: output '%s' is a null buffer", outs[k].name.c_str());
  return impl_->session->run_into(inputs, outputs);
}

Status Session::run_rows(const std::vector<std::vector<const void*>>& rows, const std::vector<void*>& outputs) {
  return impl_->session->run_rows(rows, outputs);  // checks counts, row sizes and buffers
}

Expected<std::vector<Tensor>> Session::run(const std::vector<std::pair<std::string, Tensor>>& inputs) {
  const auto& ins = impl_->model->inputs;
  const auto& outs = impl_->model->outputs;
  std::vector<const void*> in(ins.size(), nullptr);
  std::vector<char> given(ins.size(), 0);
  for (const auto& [name, t] : inputs) {
    std::size_t k = 0;
    while (k < ins.size() && ins[k].name != name) ++k;
    if (k == ins.size()) {
      std::string names;
      for (const TensorSpec& s : ins) names += (names.empty() ? "" : ", ") + s.name;
      return Err("the model has no input named '%s' (inputs: %s)", name.c_str(), names.c_str());
    }
    if (given[k]) return Err("input '%s' is given twice", name.c_str());
    const TensorSpec& want = ins[k];
    if (t.dtype != want.dtype || t.shape != want.shape)
      return Err("input '%s': expected %s, got %s", name.c_str(), spec_str(want.dtype, want.shape).c_str(),
                 spec_str(t.dtype, t.shape).c_str());
    if (t.data.size() != want.bytes())
      return Err("input '%s': %s holds %zu bytes, but its data has %zu", name.c_str(),
                 spec_str(want.dtype, want.shape).c_str(), want.bytes(), t.data.size());
    in[k] = t.data.data();
    given[k] = 1;
  }
  for (std::size_t k = 0; k < ins.size(); ++k)
    if (!given[k]) return Err("input '%s' was not given", ins[k].name.c_str());
  std::vector<Tensor> result(outs.size());
  if (impl_->model->program->tail) {  // shapes known once it runs
    std::vector<runtime::HostTensor> res;
    SYSTOLIC_RETURN_IF_ERROR(impl_->session->run_dynamic(in, &res));
    for (std::size_t k = 0; k < outs.size(); ++k) {
      result[k].dtype = static_cast<DType>(res[k].dtype);
      result[k].shape = std::move(res[k].shape);
      result[k].data = std::move(res[k].data);
    }
    return result;
  }
  std::vector<void*> out(outs.size());
  for (std::size_t k = 0; k < outs.size(); ++k) {
    result[k].dtype = outs[k].dtype;
    result[k].shape = outs[k].shape;
    result[k].data.resize(outs[k].bytes());
    out[k] = result[k].data.data();
  }
  SYSTOLIC_RETURN_IF_ERROR(impl_->session->run_into(in, out));
  return result;
}

namespace api {

runtime::Session& runtime_session(Session& s) { return *s.impl().session; }

}  // namespace api
}  // namespace systolic
