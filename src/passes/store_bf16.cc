// bf16 storage: in a bf16 plan, a tensor that a conv writes through its bf16-rounding epilogue
// (lower_bf16's bf16_out) and that only convs read, as their source or residual, holds bf16
// values in 4-byte floats; so does one that convs read only as their residual, once its writer
// rounds it (set here). Where the writer and every reader run on a kernel that takes bf16
// storage (ConvParams::bf16_io: the AMX bf16 kernel), the tensor becomes DType::bf16 (each
// value's high half: exact) and the convs are told (attr "bf16_io"). Half the bytes for every
// such activation: the AMX tiles bound a bf16 ResNet-50's 1x1 convs less than the memory their
// float activations moved.
//
// A max pool between such convs (ResNet's after its stem) keeps the storage: its kernel has a
// bf16 twin (kernels/pool, exact: a maximum is one of the values), and its input and output
// are both bf16 or both float.
//
// Runs after pack_weights (the kernels are chosen) and before memory_plan (sizes). A graph
// output, and anything another op reads (an average pool, an unfused Add, a view), stays float.
#include "interp/nn_geometry.h"
#include "kernels/conv/conv.h"
#include "kernels/pool/pool.h"
#include "passes/pass.h"

namespace systolic::passes {
namespace {

// The kernels that take bf16 storage.
bool takes_bf16_storage(const ir::Node& n) {
  return n.op == ir::Op::Conv && n.s("kernel", "") == "conv_bf16_igemm_32x32_amx" && !n.i("src_u8", 0);
}

// The bf16 twin of a float max pool's kernel, or null.
const kernels::PoolKernel* bf16_pool(const ir::Graph& g, const ir::Node& n, const CpuFeatures& cpu) {
  if ((n.op != ir::Op::MaxPool && n.op != ir::Op::GlobalMaxPool) || !n.has("kernel") || n.inputs.size() != 1 ||
      n.outputs.size() != 1 || n.outputs[0] < 0 || g.t(n.inputs[0]).dtype != ir::DType::f32)
    return nullptr;
  kernels::PoolParams p;
  if (!interp::pool_geometry(n, g.t(n.inputs[0]).shape, &p).ok()) return nullptr;
  p.bf16 = true;
  return kernels::pool_select(p, cpu);
}

}  // namespace

Status store_bf16(ir::Graph& g, PassContext& ctx) {
  if (ctx.precision != Precision::bf16 || !ctx.optimize) return Status::Ok();
  std::vector<char> ok(g.tensors.size(), 0);
  std::vector<const kernels::PoolKernel*> pool(g.nodes.size(), nullptr);
  auto storable = [&](int id) { return !g.t(id).is_const() && g.t(id).dtype == ir::DType::f32; };
  // residual_only(t): every reader of t takes it as the residual of a conv that takes bf16
  // storage (a projection shortcut's output): lower_bf16 leaves it unrounded, since no conv
  // multiplies it; stored as bf16 it is rounded as it is written, the store every other
  // activation between these convs gets (ResNet-50's four downsample convs wrote 2x the bytes
  // of the blocks' other 1x1 convs).
  std::vector<char> as_residual(g.tensors.size(), 0), otherwise(g.tensors.size(), 0);
  for (const ir::Node& n : g.nodes)
    for (std::size_t i = 0; i < n.inputs.size(); ++i)
      if (int id = n.inputs[i]; id >= 0) (takes_bf16_storage(n) && i == 3 ? as_residual : otherwise)[id] = 1;
  auto residual_only = [&](int id) { return as_residual[id] && !otherwise[id]; };
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    const ir::Node& n = g.nodes[k];
    if (takes_bf16_storage(n) && n.outputs.size() == 1 && n.outputs[0] >= 0 &&
        (n.i("bf16_out", 0) || residual_only(n.outputs[0])))
      ok[n.outputs[0]] = storable(n.outputs[0]);
    else if ((pool[k] = bf16_pool(g, n, ctx.cpu)))
      ok[n.outputs[0]] = storable(n.outputs[0]);
  }
  for (int id : g.outputs) ok[id] = 0;
  // Clearing only: each round either clears a tensor or ends.
  for (bool changed = true; changed;) {
    changed = false;
    auto clear = [&](int id) {
      if (id >= 0 && ok[id]) ok[id] = 0, changed = true;
    };
    for (std::size_t k = 0; k < g.nodes.size(); ++k) {
      const ir::Node& n = g.nodes[k];
      for (std::size_t i = 0; i < n.inputs.size(); ++i)
        if (!(takes_bf16_storage(n) && (i == 0 || i == 3)) && !(pool[k] && i == 0)) clear(n.inputs[i]);
      if (pool[k] && ok[n.inputs[0]] != ok[n.outputs[0]]) clear(n.inputs[0]), clear(n.outputs[0]);
    }
  }
  int stored = 0;
  int64_t bytes = 0;
  for (std::size_t id = 0; id < ok.size(); ++id)
    if (ok[id]) g.tensors[id].dtype = ir::DType::bf16, ++stored, bytes += g.tensors[id].bytes();
  if (stored == 0) return Status::Ok();
  ctx.log += "store_bf16: " + std::to_string(stored) + " activations stored as bf16 (" + std::to_string(bytes >> 10) +
             " KiB, half their float size)\n";
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    ir::Node& n = g.nodes[k];
    if (pool[k] && ok[n.outputs[0]]) {
      n.attrs["kernel"].str_v = pool[k]->name;
      n.set_i("bf16_io", 1);
    }
    if (!takes_bf16_storage(n)) continue;
    if (ok[n.outputs[0]] && !n.i("bf16_out", 0)) n.set_i("bf16_out", 1);  // a residual_only output
    int io = 0;
    if (ok[n.inputs[0]]) io |= kernels::kBf16Src;
    if (n.in(3) >= 0 && ok[n.in(3)]) io |= kernels::kBf16Res;
    if (ok[n.outputs[0]]) io |= kernels::kBf16Dst;
    if (io) n.set_i("bf16_io", io);
  }
  return Status::Ok();
}

}  // namespace systolic::passes
