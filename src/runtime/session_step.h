// Session::Step: one prepared step of a plan (kernel, parameters, resolved pointers),
// shared by session.cc (preparation) and session_run.cc (the run loop and profiles).
#pragma once
#include <functional>
#include <vector>

#include "interp/eval.h"
#include "kernels/conv/conv.h"
#include "kernels/eltwise/eltwise.h"
#include "kernels/matmul/matmul.h"
#include "kernels/norm/norm.h"
#include "kernels/pool/pool.h"
#include "kernels/qconv/qconv.h"
#include "kernels/qpool/qpool.h"
#include "kernels/qeltwise/qeltwise.h"
#include "kernels/qlut/qlut.h"
#include "kernels/quant/quant.h"
#include "kernels/reorder/shuffle.h"
#include "runtime/session.h"

namespace systolic::runtime {

struct Session::Step {
  enum Kind { conv, pool, reorder, eltwise, matmul, norm, interp, qconv, qpool, quantize, dequantize, qadd, qconcat, qlut, qscale, concat, shuffle };
  Kind kind = interp;
  ir::Node node;  // copy: the interpreter may see a physical (NHWC) view of it
  ir::Op op{};    // the plan's op, for profiles and errors (node.op may be the view's: Transpose)
  const kernels::ConvKernel* conv_k = nullptr;
  kernels::ConvParams cp;
  kernels::ConvArgs ca;
  const kernels::QConvKernel* qconv_k = nullptr;
  kernels::QConvParams qp;
  kernels::QConvArgs qa;
  std::vector<uint8_t> q_pad;  // the input's zero point per channel (what padding reads)
  const kernels::QPoolKernel* qpool_k = nullptr;
  kernels::QPoolArgs qpa;
  const kernels::QuantKernel* quant_k = nullptr;  // qconv: rounds its float output (q_scale, q_zp, count)
  const kernels::QEltwiseKernel* qelt_k = nullptr;
  kernels::QAddParams qadd_p;
  kernels::QScaleParams qscale_p;  // qscale: qcat_src[0] times the gate qcat_src[1] -> qcat_dst[0]
  std::vector<float> qscale_m;     // qscale: its multipliers, n * c, sized once
  std::vector<kernels::QRequantParams> qcat;  // per Concat input: into its channel slice
  std::vector<const uint8_t*> qcat_src;
  std::vector<uint8_t*> qcat_dst;
  const kernels::QLutKernel* qlut_k = nullptr;  // qlut: qcat_src[0] -> qcat_dst[0], count bytes
  std::vector<uint8_t> lut;  // qlut's table, a qconv's fused one (qa.rq.lut points here), or
                             // qconcat's, 256 bytes per input (qcat_parts point here)
  std::vector<kernels::QLutPart> qcat_parts;  // qconcat: each input's rows through its table, count rows
  std::vector<const void*> cat_src;  // concat: the inputs, each input's row bytes, rows in count
  std::vector<int64_t> cat_bytes;
  std::vector<int64_t> cat_strides;  // a Slice's source row stride (empty for Concat)
  kernels::ShuffleParams shuffle_p;
  float q_scale = 1.f;
  int32_t q_zp = 0;
  bool q_grid = false;       // qconv: round the float output to (q_scale, q_zp)
  bool q_nhwc = false;       // quantize: the plain [N,C,H,W] input (dims) written NHWC
  float q_pre_scale = 0.f;   // qconv: > 0: round the sum to (q_pre_scale, q_pre_zp), then elt_k's activation
  int32_t q_pre_zp = 0;
  int64_t count = 0;  // quantize / dequantize: elements; reorder: bytes per element
  const kernels::PoolKernel* pool_k = nullptr;
  kernels::PoolParams pp;
  const kernels::EltwiseKernel* elt_k = nullptr;
  kernels::EltwiseParams ep;
  const kernels::MatMulKernel* mm_k = nullptr;  // MatMul of two activations: src x src_b
  kernels::MatMulParams mp;
  const kernels::NormKernel* norm_k = nullptr;  // Softmax / LayerNormalization: src, scale src_b, bias src_c
  kernels::NormParams np;
  const float* src = nullptr;
  const float* src_b = nullptr;
  const float* src_c = nullptr;
  float* dst = nullptr;
  int64_t dims[4] = {0, 0, 0, 0};
  int to = 0;
  std::vector<interp::TensorRef> ins, outs;
  std::vector<float> phys_scales;    // an NHWC Resize's scales or sizes, in the physical order
  std::vector<int64_t> phys_sizes;
  double flops = 0;
  int64_t bytes = 0;  // inputs + weights + outputs
  double total_ms = 0;
  int64_t runs = 0;
};

// Prepares `st` when `n` is an int8 convolution, a uint8 pool, add, concat, gate or table, or a per-tensor
// QuantizeLinear / DequantizeLinear the kernels run (*handled then; errors name what in the
// plan does not fit); `at` resolves a tensor id to its memory. Grows *workspace as needed.
Status prepare_quantized_step(const ir::Graph& g, const ir::Node& n, const std::function<void*(int)>& at,
                              Session::Step* st, bool* handled, std::size_t* workspace);

// A conv step's parameters against its node's attributes and tensors (session_check.cc):
// `src_elem` / `dst_elem` / `res_elem` are the bytes of an input / output / residual element
// (res_elem 0: dst_elem's).
Status check_conv_step(const ir::Graph& g, const ir::Node& n, const kernels::ConvParams& p, std::size_t src_elem,
                       std::size_t dst_elem, std::size_t res_elem = 0);

// A pool step's geometry against its output.
Status check_pool_step(const ir::Graph& g, const ir::Node& n, const kernels::PoolParams& p);
// Every tensor a step reads or writes, and every graph output, has storage (a constant or a
// place in the arena): otherwise a kernel would be handed a null pointer.
Status check_storage(const ir::Graph& g);

}  // namespace systolic::runtime
