// The dynamic tail: the part of a plan whose shapes depend on values (detection
// post-processing), run on the reference interpreter after the static plan, every shape
// inferred from the values of the run.
#pragma once
#include <map>
#include <memory>
#include <vector>

#include <pthreadpool.h>

#include "base/aligned_vector.h"
#include "base/status.h"
#include "interp/eval.h"
#include "ir/graph.h"
#include "kernels/conv/conv.h"
#include "runtime/host_tensor.h"

namespace systolic::runtime {

// Runs `tail` with its inputs bound, in order, to `inputs` (each must agree with the tail's
// dtype; shapes are taken as given) and returns its outputs in order. If nodes run the branch
// their condition picks. Errors name the node that failed. The tensors a run makes may total
// at most `max_bytes` (a tail's shapes come from data: an error, not an exhausted machine).
// Buffers a session's tail runs hand on to the next: fresh memory costs a page fault per
// 4 KiB on first touch, most of Faster R-CNN's tail when every run allocated anew.
struct TailMemory {
  std::multimap<std::size_t, std::shared_ptr<AlignedBytes>> free;  // by size
  // A tail Gemm's constant weights packed for a conv kernel, once per session (by node).
  struct PackedGemm {
    const kernels::ConvKernel* kernel = nullptr;  // null: none took it (the Gemm runs elsewhere)
    AlignedVector<float> weights;
  };
  std::map<const ir::Node*, PackedGemm> gemms;
};

// Float Gemms run on the conv kernels where their weights are constant (fully connected
// layers: a 1x1 conv over M pixels), else on the matrix kernels where nothing is transposed
// (on `pool`, which may be null).
// With `memory`, tensors reuse its buffers (which may be larger than they need) and leave
// theirs there.
Status run_tail(const ir::Graph& tail, const std::vector<interp::TensorRef>& inputs, std::vector<HostTensor>* outputs,
                std::size_t max_bytes, pthreadpool_t pool = nullptr, TailMemory* memory = nullptr);

}  // namespace systolic::runtime
