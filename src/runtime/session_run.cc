// Session runs: the by-name convenience run, the allocation-free run_into, the step loop
// with optional per-step timing and preallocated tracing, and the per-step profile.
#include <algorithm>
#include <cstring>

#include "kernels/reorder/concat.h"
#include "kernels/reorder/reorder.h"
#include "runtime/dynamic_tail.h"
#include "runtime/session_step.h"

namespace systolic::runtime {
namespace {

// Copies n rows of `bytes` each, src[r] (zeros where null), to dst, on the pool in slices of at
// most kSlice bytes: a batch of 224x224 images is megabytes, and one thread copying it while the
// others spin-wait was ~5% of a served int8 ResNet-50 batch. Small copies stay on the caller.
constexpr std::size_t kSlice = 128 * 1024;
void copy_rows(uint8_t* dst, const void* const* src, std::size_t n, std::size_t bytes, pthreadpool_t pool) {
  auto copy = [&](std::size_t r, std::size_t at, std::size_t len) {
    uint8_t* d = dst + r * bytes + at;
    if (src[r]) std::memcpy(d, static_cast<const uint8_t*>(src[r]) + at, len);
    else std::memset(d, 0, len);
  };
  if (!pool || n * bytes <= 2 * kSlice) {
    for (std::size_t r = 0; r < n; ++r) copy(r, 0, bytes);
    return;
  }
  const std::size_t per_row = (bytes + kSlice - 1) / kSlice;
  auto task = [&](std::size_t i) {
    const std::size_t r = i / per_row, at = i % per_row * kSlice;
    copy(r, at, std::min(kSlice, bytes - at));
  };
  pthreadpool_parallelize_1d(pool, task, n * per_row, kPoolFlags);
}

}  // namespace

Status Session::run(const std::vector<std::pair<std::string, HostTensor>>& inputs, std::vector<HostTensor>* outputs) {
  const ir::Graph& g = program_->graph;
  std::vector<char> given(g.inputs.size(), 0);
  std::vector<const void*> in_ptrs(g.inputs.size(), nullptr);
  for (const auto& [name, t] : inputs) {
    std::size_t k = 0;
    while (k < g.inputs.size() && g.t(g.inputs[k]).name != name) ++k;
    if (k == g.inputs.size()) {
      std::string names;
      for (int id : g.inputs) names += (names.empty() ? "" : ", ") + g.t(id).name;
      return Err("the model has no input named '%s' (inputs: %s)", name.c_str(), names.c_str());
    }
    const TensorInfo& info = inputs_[k];
    if (t.dtype != info.dtype || t.shape != info.shape)
      return Err("input '%s': expected %s%s, got %s%s", name.c_str(), ir::dtype_name(info.dtype),
                 ir::shape_str(info.shape).c_str(), ir::dtype_name(t.dtype), ir::shape_str(t.shape).c_str());
    if (t.data.size() != info.bytes()) return Err("input '%s': buffer holds %zu bytes, expected %zu", name.c_str(),
                                                  t.data.size(), info.bytes());
    in_ptrs[k] = t.data.data();
    given[k] = 1;
  }
  for (std::size_t k = 0; k < g.inputs.size(); ++k)
    if (!given[k]) return Err("input '%s' was not given", g.t(g.inputs[k]).name.c_str());
  return run_dynamic(in_ptrs, outputs);
}

Status Session::run_tail(const std::vector<const void*>& inputs, std::vector<HostTensor>* outputs) {
  const ir::Graph& g = program_->graph;
  std::vector<interp::TensorRef> refs;
  for (const auto& [from_input, k] : tail_sources_) {
    const ir::Tensor& t = g.t(from_input ? g.inputs[k] : g.outputs[k]);
    const void* data = from_input ? inputs[k]
                       : t.is_const() ? static_cast<const void*>(t.data->data())
                                      : arena_ + t.arena_offset;
    refs.push_back({t.dtype, t.shape, const_cast<void*>(data)});
  }
  return runtime::run_tail(*program_->tail, refs, outputs, tail_max_bytes_, pool_.get(), tail_memory_.get());
}

Status Session::run_dynamic(const std::vector<const void*>& inputs, std::vector<HostTensor>* outputs) {
  const ir::Graph& g = program_->graph;
  if (inputs.size() != g.inputs.size())
    return Err("run: the model has %zu inputs; got %zu buffers", g.inputs.size(), inputs.size());
  if (program_->tail) {
    SYSTOLIC_RETURN_IF_ERROR(load_inputs(inputs, "run"));
    SYSTOLIC_RETURN_IF_ERROR(execute());
    return timed_tail(inputs, outputs);
  }
  outputs->resize(g.outputs.size());
  std::vector<void*> dst(g.outputs.size());
  for (std::size_t k = 0; k < g.outputs.size(); ++k) {
    HostTensor& o = (*outputs)[k];
    o.dtype = outputs_[k].dtype;
    o.shape = outputs_[k].shape;
    o.data.resize(outputs_[k].bytes());
    dst[k] = o.data.data();
  }
  for (int64_t r = 0; r < runs_; ++r) {
    SYSTOLIC_RETURN_IF_ERROR(load_inputs(inputs, "run", r));
    SYSTOLIC_RETURN_IF_ERROR(execute());
    store_outputs(dst, r);
  }
  return Status::Ok();
}

Status Session::load_inputs(const std::vector<const void*>& inputs, const char* who, int64_t run) {
  const ir::Graph& g = program_->graph;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const ir::Tensor& t = g.t(g.inputs[k]);
    if (!inputs[k] && t.bytes() > 0) return Err("%s: input '%s' is a null buffer", who, t.name.c_str());
    if (t.arena_offset >= 0 && t.bytes() > 0) {
      const void* src = static_cast<const uint8_t*>(inputs[k]) + run * t.bytes();
      copy_rows(arena_ + t.arena_offset, &src, 1, static_cast<std::size_t>(t.bytes()), pool_.get());
    }
  }
  return Status::Ok();
}

void Session::load_rows(const std::vector<std::vector<const void*>>& rows, int64_t run) {
  const ir::Graph& g = program_->graph;
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const ir::Tensor& t = g.t(g.inputs[k]);
    if (t.arena_offset < 0 || t.bytes() == 0) continue;
    const std::size_t all = rows[k].size(), runs = static_cast<std::size_t>(runs_);
    if (all % runs != 0) {  // one row: the whole input, whose slice `run` this run reads
      const uint8_t* whole = static_cast<const uint8_t*>(rows[k][0]);
      const void* src = whole ? whole + run * t.bytes() : nullptr;
      copy_rows(arena_ + t.arena_offset, &src, 1, static_cast<std::size_t>(t.bytes()), pool_.get());
      continue;
    }
    const std::size_t n = all / runs;  // this run's rows
    copy_rows(arena_ + t.arena_offset, rows[k].data() + static_cast<std::size_t>(run) * n, n,
              static_cast<std::size_t>(t.bytes()) / n, pool_.get());
  }
}

template <class Load>
Status Session::run_static(const std::vector<void*>& outputs, const char* who, Load&& load) {
  const ir::Graph& g = program_->graph;
  for (std::size_t k = 0; k < outputs.size(); ++k)
    if (!outputs[k] && g.t(g.outputs[k]).bytes() > 0)
      return Err("%s: output '%s' is a null buffer", who, g.t(g.outputs[k]).name.c_str());
  for (int64_t r = 0; r < runs_; ++r) {
    SYSTOLIC_RETURN_IF_ERROR(load(r));
    SYSTOLIC_RETURN_IF_ERROR(execute());
    store_outputs(outputs, r);
  }
  return Status::Ok();
}

Status Session::run_rows(const std::vector<std::vector<const void*>>& rows, const std::vector<void*>& outputs) {
  const ir::Graph& g = program_->graph;
  if (rows.size() != g.inputs.size())
    return Err("run_rows: the model has %zu inputs; got rows for %zu", g.inputs.size(), rows.size());
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const std::size_t n = rows[k].size(), bytes = static_cast<std::size_t>(inputs_[k].bytes());
    if (n == 0 || bytes % n != 0 || (n != 1 && n % static_cast<std::size_t>(runs_) != 0))
      return Err("run_rows: input '%s' (%s%s) cannot be cut into %zu rows", inputs_[k].name.c_str(),
                 ir::dtype_name(inputs_[k].dtype), ir::shape_str(inputs_[k].shape).c_str(), n);
  }
  if (program_->tail) {  // run_dynamic takes whole inputs: gather them first
    std::vector<std::vector<uint8_t>> whole(rows.size());
    std::vector<const void*> ptrs(rows.size());
    for (std::size_t k = 0; k < rows.size(); ++k) {
      whole[k].resize(static_cast<std::size_t>(inputs_[k].bytes()));
      copy_rows(whole[k].data(), rows[k].data(), rows[k].size(), whole[k].size() / rows[k].size(), pool_.get());
      ptrs[k] = whole[k].data();
    }
    return run_into(ptrs, outputs);
  }
  if (outputs.size() != outputs_.size())
    return Err("run_rows: the model has %zu outputs; got %zu buffers", outputs_.size(), outputs.size());
  return run_static(outputs, "run_rows", [&](int64_t r) {
    load_rows(rows, r);
    return Status::Ok();
  });
}

void Session::store_outputs(const std::vector<void*>& outputs, int64_t run) const {
  const ir::Graph& g = program_->graph;
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    const ir::Tensor& t = g.t(g.outputs[k]);
    if (t.bytes() == 0) continue;
    const void* src = t.is_const() ? static_cast<const void*>(t.data->data()) : arena_ + t.arena_offset;
    std::memcpy(static_cast<uint8_t*>(outputs[k]) + run * t.bytes(), src, t.bytes());
  }
}

Status Session::timed_tail(const std::vector<const void*>& inputs, std::vector<HostTensor>* outputs) {
  using clock = std::chrono::steady_clock;
  const auto t0 = profiling_ ? clock::now() : clock::time_point{};
  Status st = run_tail(inputs, outputs);
  if (profiling_) {
    tail_ms_ += std::chrono::duration<double, std::milli>(clock::now() - t0).count();
    ++tail_runs_;
  }
  return st;
}

Status Session::run_into(const std::vector<const void*>& inputs, const std::vector<void*>& outputs) {
  const ir::Graph& g = program_->graph;
  if (inputs.size() != g.inputs.size() || outputs.size() != outputs_.size())
    return Err("run_into: the model has %zu inputs and %zu outputs; got %zu and %zu buffers", g.inputs.size(),
               outputs_.size(), inputs.size(), outputs.size());
  if (program_->tail) {
    // The tail allocates: its shapes are known only once it runs. Outputs whose shapes the
    // model fixes are copied into the caller's buffers; a data-dependent one needs run().
    for (std::size_t k = 0; k < outputs_.size(); ++k)
      if (outputs_[k].dynamic())
        return Err("run_into: output '%s' has a data-dependent shape %s; use run(), which allocates it",
                   outputs_[k].name.c_str(), ir::shape_str(outputs_[k].shape).c_str());
    std::vector<HostTensor> res;
    SYSTOLIC_RETURN_IF_ERROR(run_dynamic(inputs, &res));
    for (std::size_t k = 0; k < outputs_.size(); ++k) {
      if (res[k].shape != outputs_[k].shape || res[k].dtype != outputs_[k].dtype)
        return Err("output '%s' came out %s%s, the model says %s%s", outputs_[k].name.c_str(), ir::dtype_name(res[k].dtype),
                   ir::shape_str(res[k].shape).c_str(), ir::dtype_name(outputs_[k].dtype), ir::shape_str(outputs_[k].shape).c_str());
      if (!res[k].data.empty()) {
        if (!outputs[k]) return Err("run_into: output '%s' is a null buffer", outputs_[k].name.c_str());
        std::memcpy(outputs[k], res[k].data.data(), res[k].data.size());
      }
    }
    return Status::Ok();
  }
  return run_static(outputs, "run_into", [&](int64_t r) { return load_inputs(inputs, "run_into", r); });
}

Status Session::execute() {
  using clock = std::chrono::steady_clock;
  const bool trace = tracing_ && trace_.size() + steps_.size() + 1 <= trace_.capacity();
  const auto run_t0 = trace ? clock::now() : clock::time_point{};
  if (observer_)
    for (int id : program_->graph.inputs)
      if (program_->graph.t(id).arena_offset >= 0) observer_(program_->graph.t(id), arena_ + program_->graph.t(id).arena_offset);
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    Step* st = steps_[i].get();
    const auto t0 = profiling_ ? clock::now() : clock::time_point{};
    switch (st->kind) {
      case Step::conv: st->conv_k->run(st->cp, st->ca, pool_.get()); break;
      case Step::pool: st->pool_k->run(st->pp, st->src, st->dst, pool_.get()); break;
      case Step::reorder:
        if (st->src == st->dst) break;  // one channel or 1x1 pixels: both orders are the same bytes
        if (st->count == 1)
          kernels::reorder_u8(reinterpret_cast<const uint8_t*>(st->src), reinterpret_cast<uint8_t*>(st->dst),
                              st->dims, st->to, pool_.get());
        else
          kernels::reorder_f32(st->src, st->dst, st->dims, st->to, pool_.get());
        break;
      case Step::eltwise: st->elt_k->run(st->ep, st->src, st->src_b, st->dst, pool_.get()); break;
      case Step::matmul: st->mm_k->run(st->mp, st->src, st->src_b, st->dst, pool_.get()); break;
      case Step::norm: st->norm_k->run(st->np, st->src, st->src_b, st->src_c, st->dst, pool_.get()); break;
      case Step::qconv:
        st->qconv_k->run(st->qp, st->qa, pool_.get());
        if (st->q_pre_scale > 0.f) {
          float* y = static_cast<float*>(st->qa.dst);
          st->quant_k->round(y, st->count, st->q_pre_scale, st->q_pre_zp, pool_.get());
          st->elt_k->run(st->ep, y, nullptr, y, pool_.get());
        }
        if (st->q_grid) st->quant_k->round(static_cast<float*>(st->qa.dst), st->count, st->q_scale, st->q_zp, pool_.get());
        break;
      case Step::qpool: st->qpool_k->run(st->pp, st->qpa, pool_.get()); break;
      case Step::qadd:
        st->qelt_k->add(st->qadd_p, st->qcat_src[0], st->qcat_src[1], st->qcat_dst[0], pool_.get());
        break;
      case Step::qscale:
        st->qelt_k->scale(st->qscale_p, st->qcat_src[0], st->qcat_src[1], st->qscale_m.data(), st->qcat_dst[0],
                          pool_.get());
        break;
      case Step::qlut: st->qlut_k->apply(st->lut.data(), st->qcat_src[0], st->qcat_dst[0], st->count, pool_.get()); break;
      case Step::qconcat:
        kernels::qlut_parts(*st->qlut_k, st->qcat_parts.data(), static_cast<int>(st->qcat_parts.size()), st->count,
                            pool_.get());
        break;
      case Step::concat:
        if (st->cat_src.size() == 1 && st->cat_src[0] == st->dst) break;  // a view: the same bytes
        kernels::concat_rows(st->cat_src.data(), st->cat_bytes.data(),
                             st->cat_strides.empty() ? nullptr : st->cat_strides.data(),
                             static_cast<int>(st->cat_bytes.size()), st->dst, st->count, pool_.get());
        break;
      case Step::shuffle: kernels::shuffle_channels(st->shuffle_p, st->cat_src.data(), st->dst, pool_.get()); break;
      case Step::quantize:
        if (st->q_nhwc)
          st->quant_k->quantize_nhwc(st->src, static_cast<uint8_t*>(static_cast<void*>(st->dst)), st->dims[0],
                                     st->dims[1], st->dims[2] * st->dims[3], st->q_scale, st->q_zp, pool_.get());
        else
          st->quant_k->quantize(st->src, static_cast<uint8_t*>(static_cast<void*>(st->dst)), st->count, st->q_scale,
                                st->q_zp, pool_.get());
        break;
      case Step::dequantize:
        st->quant_k->dequantize(reinterpret_cast<const uint8_t*>(st->src), st->dst, st->count, st->q_scale, st->q_zp,
                                pool_.get());
        break;
      case Step::interp: {
        Status s = interp::eval_node(st->node, st->ins, st->outs);
        if (!s.ok()) {
          // The families' messages already start with "Op node: "; the core ones may not.
          const std::string who = std::string(ir::op_name(st->op)) + " " + st->node.name + ":";
          if (s.message().rfind(who, 0) == 0) return s;
          return Err("%s %s", who.c_str(), s.message().c_str());
        }
        break;
      }
    }
    if (observer_) {
      const ir::Graph& g = program_->graph;
      for (int o : st->node.outputs)
        if (o >= 0 && g.t(o).arena_offset >= 0) observer_(g.t(o), arena_ + g.t(o).arena_offset);
    }
    if (profiling_) {
      const auto t1 = clock::now();
      st->total_ms += std::chrono::duration<double, std::milli>(t1 - t0).count();
      ++st->runs;
      if (trace)  // capacity was checked above: no reallocation
        trace_.push_back({static_cast<int32_t>(i), runs_traced_, (t0 - epoch_).count(), (t1 - t0).count()});
    }
  }
  if (trace) {
    const auto t1 = clock::now();
    trace_.push_back({-1, runs_traced_++, (run_t0 - epoch_).count(), (t1 - run_t0).count()});
  }
  return Status::Ok();
}

void Session::set_trace(std::size_t runs) {
  trace_.clear();
  runs_traced_ = 0;
  tracing_ = runs > 0;
  if (tracing_) {
    trace_.reserve(runs * static_cast<std::size_t>(runs_) * (steps_.size() + 1));
    profiling_ = true;
  }
}

std::vector<std::string> Session::allocating_steps() const {
  std::vector<std::string> out;
  for (const auto& st : steps_) {
    if (st->kind != Step::interp) continue;
    switch (st->node.op) {
      // Plain copies (or nothing) in the interpreter: no allocation.
      case ir::Op::Flatten: case ir::Op::Reshape: case ir::Op::Squeeze: case ir::Op::Unsqueeze:
      case ir::Op::Identity: case ir::Op::Dropout:
        break;
      default:
        out.push_back(std::string(ir::op_name(st->op)) + " " + st->node.name);
    }
  }
  return out;
}

std::vector<Session::StepProfile> Session::profile() const {
  std::vector<StepProfile> out;
  for (const auto& st : steps_) {
    StepProfile p;
    p.name = st->node.name;
    p.op = ir::op_name(st->op);
    p.kernel = st->conv_k ? st->conv_k->name
               : st->qconv_k ? st->qconv_k->name
               : st->pool_k ? st->pool_k->name
               : st->qpool_k ? st->qpool_k->name
               : st->quant_k ? st->quant_k->name
               : st->qelt_k ? st->qelt_k->name
               : st->qlut_k ? st->qlut_k->name
               : st->elt_k  ? st->elt_k->name
               : st->mm_k   ? st->mm_k->name
               : st->norm_k ? st->norm_k->name
               : st->kind == Step::reorder ? (st->count == 1 ? "reorder_u8" : "reorder_f32")
               : st->kind == Step::concat  ? (st->op == ir::Op::Slice       ? "slice_rows"
                                              : st->op == ir::Op::Transpose ? "view"
                                                                            : "concat_rows")
               : st->kind == Step::shuffle ? "shuffle_channels"
                                           : "interp";
    // Per run of the plan: a micro-batched plan runs each step runs_ times.
    p.flops = st->flops * static_cast<double>(runs_);
    p.bytes = st->bytes * runs_;
    p.total_ms = st->total_ms;
    p.runs = st->runs / runs_;
    out.push_back(std::move(p));
  }
  if (program_->tail) {
    StepProfile p;
    p.name = "dynamic tail (" + std::to_string(program_->tail->nodes.size()) + " nodes)";
    p.op = "DynamicTail";
    p.kernel = "interp";
    p.total_ms = tail_ms_;
    p.runs = tail_runs_;
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace systolic::runtime
