// Reference neural-network ops: Conv, BatchNormalization, pools, Gemm, MatMul, Softmax, LRN.
// Conv and pools call their kernel family's NCHW reference.
#include <algorithm>
#include <cmath>
#include <vector>

#include "interp/eval.h"
#include "interp/nn_geometry.h"
#include "kernels/conv/conv.h"
#include "kernels/pool/pool.h"

namespace systolic::interp {
namespace {

using ir::Op;

Status need_f32(const ir::Node& n, const std::vector<TensorRef>& in) {
  for (const TensorRef& t : in)
    if (t.data && t.dtype != ir::DType::f32 && t.dtype != ir::DType::i64)
      return Err("%s %s: element type %s is not supported (float32 only)", ir::op_name(n.op), n.name.c_str(),
                 ir::dtype_name(t.dtype));
  return Status::Ok();
}

Status eval_gemm(const ir::Node& n, const std::vector<TensorRef>& in, const TensorRef& y) {
  const bool ta = n.i("transA", 0), tb = n.i("transB", 0);
  const float alpha = n.f("alpha", 1.f), beta = n.f("beta", 1.f);
  const auto& as = in[0].shape;
  const auto& bs = in[1].shape;
  const int64_t M = ta ? as[1] : as[0], K = ta ? as[0] : as[1], N = tb ? bs[0] : bs[1];
  const float* A = in[0].as<float>();
  const float* B = in[1].as<float>();
  float* Y = y.as<float>();
  std::vector<int64_t> cst;
  const bool has_c = in.size() > 2 && in[2].data;
  if (has_c) cst = broadcast_strides(in[2].shape, y.shape);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += static_cast<double>(A[ta ? k * M + m : m * K + k]) * B[tb ? j * K + k : k * N + j];
      double v = alpha * acc;
      if (has_c) v += beta * in[2].as<float>()[m * cst[0] + j * cst[1]];
      Y[m * N + j] = static_cast<float>(v);
    }
  return Status::Ok();
}

Status eval_matmul(const TensorRef& a, const TensorRef& b, const TensorRef& y) {
  ir::Shape as = a.shape, bs = b.shape;
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  const int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  ir::Shape abatch(as.begin(), as.end() - 2), bbatch(bs.begin(), bs.end() - 2);
  auto batch = broadcast_shapes(abatch, bbatch);
  if (!batch.ok()) return batch.status();
  auto ast = broadcast_strides(abatch, *batch), bst = broadcast_strides(bbatch, *batch);
  const int64_t nb = ir::num_elements(*batch);
  std::vector<int64_t> idx(batch->size(), 0);
  std::vector<double> acc(static_cast<std::size_t>(N));
  for (int64_t e = 0; e < nb; ++e) {
    int64_t ao = 0, bo = 0;
    for (std::size_t d = 0; d < idx.size(); ++d) {
      ao += idx[d] * ast[d];
      bo += idx[d] * bst[d];
    }
    const float* A = a.as<float>() + ao * M * K;
    const float* B = b.as<float>() + bo * K * N;
    float* Y = y.as<float>() + e * M * N;
    // Row by row with B read along its rows (cache-friendly and vectorizable); each
    // output still sums its products in k order in double.
    for (int64_t m = 0; m < M; ++m) {
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t k = 0; k < K; ++k) {
        const double av = A[m * K + k];
        const float* brow = B + k * N;
        for (int64_t j = 0; j < N; ++j) acc[j] += av * brow[j];
      }
      for (int64_t j = 0; j < N; ++j) Y[m * N + j] = static_cast<float>(acc[j]);
    }
    for (int d = static_cast<int>(idx.size()) - 1; d >= 0; --d) {
      if (++idx[d] < (*batch)[d]) break;
      idx[d] = 0;
    }
  }
  return Status::Ok();
}

Status eval_softmax(const ir::Node& n, const TensorRef& x, const TensorRef& y) {
  const int64_t r = static_cast<int64_t>(x.shape.size());
  int64_t axis = n.i("axis", -1);
  if (axis < 0) axis += r;
  int64_t outer = 1, len = 1, inner = 1;
  if (n.i("legacy_2d", 0)) {
    for (int64_t d = 0; d < axis; ++d) outer *= x.shape[d];
    for (int64_t d = axis; d < r; ++d) len *= x.shape[d];
  } else {
    for (int64_t d = 0; d < axis; ++d) outer *= x.shape[d];
    len = x.shape[axis];
    for (int64_t d = axis + 1; d < r; ++d) inner *= x.shape[d];
  }
  const float* X = x.as<float>();
  float* Y = y.as<float>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * len * inner + i;
      float mx = -INFINITY;
      for (int64_t k = 0; k < len; ++k) mx = std::max(mx, X[base + k * inner]);
      double sum = 0;
      for (int64_t k = 0; k < len; ++k) sum += std::exp(static_cast<double>(X[base + k * inner]) - mx);
      for (int64_t k = 0; k < len; ++k)
        Y[base + k * inner] = static_cast<float>(std::exp(static_cast<double>(X[base + k * inner]) - mx) / sum);
    }
  return Status::Ok();
}

Status eval_lrn(const ir::Node& n, const TensorRef& x, const TensorRef& y) {
  const int64_t size = n.i("size", 1);
  const double alpha = n.f("alpha", 1e-4f), beta = n.f("beta", 0.75f), bias = n.f("bias", 1.f);
  const int64_t N = x.shape[0], C = x.shape[1];
  int64_t inner = 1;
  for (std::size_t d = 2; d < x.shape.size(); ++d) inner *= x.shape[d];
  const int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
  for (int64_t b = 0; b < N; ++b)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < inner; ++i) {
        double sq = 0;
        for (int64_t k = std::max<int64_t>(0, c - lo); k <= std::min(C - 1, c + hi); ++k) {
          const double v = x.as<float>()[(b * C + k) * inner + i];
          sq += v * v;
        }
        const int64_t at = (b * C + c) * inner + i;
        y.as<float>()[at] = static_cast<float>(x.as<float>()[at] / std::pow(bias + alpha / size * sq, beta));
      }
  return Status::Ok();
}

}  // namespace

Status eval_nn(const ir::Node& n, const std::vector<TensorRef>& in, const std::vector<TensorRef>& out) {
  SYSTOLIC_RETURN_IF_ERROR(need_f32(n, in));
  const TensorRef& y = out[0];
  switch (n.op) {
    case Op::Conv: {
      if (is_volume(in[0].shape)) {
        kernels::VolumeConvParams p;
        SYSTOLIC_RETURN_IF_ERROR(conv_volume_geometry(n, in[0].shape, in[1].shape, &p));
        if (n.i("act", 0) || n.i("bf16", 0) || (in.size() > 3 && in[3].data))
          return Err("Conv %s: a 3-D conv with a fused epilogue or bf16 rounding is not supported", n.name.c_str());
        const float* bias = in.size() > 2 && in[2].data ? in[2].as<float>() : nullptr;
        kernels::conv_volume_ref(p, in[0].as<float>(), in[1].as<float>(), bias, y.as<float>());
        return Status::Ok();
      }
      kernels::ConvParams p;
      SYSTOLIC_RETURN_IF_ERROR(conv_geometry(n, in[0].shape, in[1].shape, &p));
      if (p.src_u8) return Err("Conv %s reads a uint8 image: it runs as a kernel step only", n.name.c_str());
      const float* bias = in.size() > 2 && in[2].data ? in[2].as<float>() : nullptr;
      const float* residual = in.size() > 3 && in[3].data ? in[3].as<float>() : nullptr;
      kernels::Epilogue ep;  // set when fuse_epilogue folded an activation into this conv
      ep.act = static_cast<kernels::Act>(n.i("act", 0));
      ep.a = n.f("act_a", 0.f);
      ep.b = n.f("act_b", 0.f);
      // A bf16 conv (passes/lower_bf16.cc) multiplies bf16-rounded inputs and weights, and may
      // round its output too.
      ep.round_bf16 = n.i("bf16_out", 0) != 0;
      if (n.i("bf16", 0))
        kernels::conv_ref_bf16_nchw(p, in[0].as<float>(), in[1].as<float>(), bias, residual, ep, y.as<float>());
      else
        kernels::conv_ref_nchw(p, in[0].as<float>(), in[1].as<float>(), bias, residual, ep, y.as<float>());
      return Status::Ok();
    }
    case Op::MaxPool: case Op::AveragePool: case Op::GlobalAveragePool: case Op::GlobalMaxPool: {
      if (is_volume(in[0].shape)) {
        kernels::VolumePoolParams p;
        SYSTOLIC_RETURN_IF_ERROR(pool_volume_geometry(n, in[0].shape, &p));
        kernels::pool_volume_ref(p, in[0].as<float>(), y.as<float>());
        return Status::Ok();
      }
      kernels::PoolParams p;
      SYSTOLIC_RETURN_IF_ERROR(pool_geometry(n, in[0].shape, &p));
      if (pool_has_indices(n))
        kernels::pool_max_indices_ref_nchw(p, in[0].as<float>(), y.as<float>(), out[1].as<int64_t>(),
                                           n.i("storage_order", 0) == 1);
      else
        kernels::pool_ref_nchw(p, in[0].as<float>(), y.as<float>());
      return Status::Ok();
    }
    case Op::BatchNormalization: {
      const auto& xs = in[0].shape;
      const int64_t N = xs[0], C = xs.size() > 1 ? xs[1] : 1;
      int64_t inner = 1;
      for (std::size_t d = 2; d < xs.size(); ++d) inner *= xs[d];
      const double eps = n.f("epsilon", 1e-5f);
      for (int64_t c = 0; c < C; ++c) {
        const double scale = in[1].as<float>()[c] / std::sqrt(static_cast<double>(in[4].as<float>()[c]) + eps);
        const double shift = in[2].as<float>()[c] - in[3].as<float>()[c] * scale;
        for (int64_t b = 0; b < N; ++b)
          for (int64_t i = 0; i < inner; ++i) {
            const int64_t at = (b * C + c) * inner + i;
            y.as<float>()[at] = static_cast<float>(in[0].as<float>()[at] * scale + shift);
          }
      }
      return Status::Ok();
    }
    case Op::Gemm: return eval_gemm(n, in, y);
    case Op::MatMul: return eval_matmul(in[0], in[1], y);
    case Op::Softmax: return eval_softmax(n, in[0], y);
    case Op::LRN: return eval_lrn(n, in[0], y);
    default: return Err("no reference implementation for %s", ir::op_name(n.op));
  }
}

}  // namespace systolic::interp
