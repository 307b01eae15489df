// Weight pre-packing: picks the kernel for every NHWC convolution and pool on the target's
// features and stores conv weights in that kernel's packed layout, so the plan carries them
// ready to stream (no repacking at load or run time).
#include "interp/nn_geometry.h"
#include "kernels/bconv/bconv.h"
#include "kernels/conv/conv.h"
#include "kernels/pool/pool.h"
#include "kernels/qconv/qconv.h"
#include "kernels/qpool/qpool.h"
#include "passes/pass.h"

namespace systolic::passes {

Status pack_weights(ir::Graph& g, PassContext& ctx) {
  for (ir::Node& n : g.nodes) {
    if (n.inputs.empty() || n.inputs[0] < 0 || g.t(n.inputs[0]).layout != ir::Layout::nhwc) continue;
    if (n.op == ir::Op::Conv && g.t(n.inputs[1]).dtype == ir::DType::i8) {  // int8 (lower_int8)
      const ir::Tensor& w = g.t(n.inputs[1]);
      kernels::QConvParams p;
      SYSTOLIC_RETURN_IF_ERROR(interp::conv_geometry(n, g.t(n.inputs[0]).shape, w.shape, &p.conv));
      p.out_f32 = static_cast<int>(n.i("q_out_f32", 0));
      std::string why;
      const kernels::QConvKernel* k = kernels::qconv_select(p, ctx.cpu, &why);
      if (!k) return Err("Conv %s: no int8 kernel accepts it: %s", n.name.c_str(), why.c_str());
      ctx.log += n.name + ": " + k->name + "\n" + why;
      AlignedBytes packed(k->packed_bytes(p));
      k->pack(p, w.as<int8_t>(), packed.data());
      const int64_t bytes = static_cast<int64_t>(packed.size());
      n.inputs[1] = g.add_const(g.fresh_name(w.name + ".packed"), ir::DType::i8, {bytes}, std::move(packed));
      ir::Attr a;
      a.kind = ir::Attr::s;
      a.str_v = k->name;
      n.attrs["kernel"] = a;
      n.set_ints("conv_params", interp::encode_conv_params(p.conv));
    } else if (n.op == ir::Op::Conv) {
      const ir::Tensor& w = g.t(n.inputs[1]);
      kernels::ConvParams p;
      SYSTOLIC_RETURN_IF_ERROR(interp::conv_geometry(n, g.t(n.inputs[0]).shape, w.shape, &p));
      std::string why;
      const kernels::ConvKernel* k = nullptr;
      // bf16 (lower_bf16): a vdpbf16ps kernel where one accepts, else the fp32 family on the
      // bf16 values the plan rounded.
      const bool bf16 = n.i("bf16", 0) != 0;
      if (bf16) {
        k = kernels::bconv_select(p, ctx.cpu, &why);
        if (kernels::bconv_is_reference(k)) k = nullptr;
      }
      if (!k) k = kernels::conv_select(p, ctx.cpu, &why);
      if (!k) return Err("Conv %s: no kernel accepts it: %s", n.name.c_str(), why.c_str());
      ctx.log += n.name + ": " + k->name + (bf16 ? " (bf16)" : "") + "\n" + why;
      std::vector<float> packed(k->packed_floats(p));
      k->pack(p, w.as<float>(), packed.data());
      n.inputs[1] = g.add_const_f32(g.fresh_name(w.name + ".packed"), {static_cast<int64_t>(packed.size())}, packed);
      ir::Attr a;
      a.kind = ir::Attr::s;
      a.str_v = k->name;
      n.attrs["kernel"] = a;
      n.set_ints("conv_params", interp::encode_conv_params(p));
    } else if ((n.op == ir::Op::MaxPool && !interp::pool_has_indices(n)) || n.op == ir::Op::AveragePool ||
               n.op == ir::Op::GlobalAveragePool || n.op == ir::Op::GlobalMaxPool) {
      kernels::PoolParams p;
      SYSTOLIC_RETURN_IF_ERROR(interp::pool_geometry(n, g.t(n.inputs[0]).shape, &p));
      std::string why;
      const bool u8 = g.t(n.inputs[0]).dtype == ir::DType::u8;
      const char* name = nullptr;
      if (u8) {
        const kernels::QPoolKernel* k = kernels::qpool_select(p, ctx.cpu, &why);
        name = k ? k->name : nullptr;
      } else {
        const kernels::PoolKernel* k = kernels::pool_select(p, ctx.cpu, &why);
        name = k ? k->name : nullptr;
      }
      if (!name) return Err("%s %s: no kernel accepts it: %s", ir::op_name(n.op), n.name.c_str(), why.c_str());
      ctx.log += n.name + ": " + name + "\n" + why;
      ir::Attr a;
      a.kind = ir::Attr::s;
      a.str_v = name;
      n.attrs["kernel"] = a;
    }
  }
  return Status::Ok();
}

}  // namespace systolic::passes
