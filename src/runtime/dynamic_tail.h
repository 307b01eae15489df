// The dynamic tail: the part of a plan whose shapes depend on values (detection
// post-processing), run on the reference interpreter after the static plan, every shape
// inferred from the values of the run.
#pragma once
#include <vector>

#include <pthreadpool.h>

#include "base/status.h"
#include "interp/eval.h"
#include "ir/graph.h"
#include "runtime/host_tensor.h"

namespace systolic::runtime {

// Runs `tail` with its inputs bound, in order, to `inputs` (each must agree with the tail's
// dtype; shapes are taken as given) and returns its outputs in order. If nodes run the branch
// their condition picks. Errors name the node that failed. The tensors a run makes may total
// at most `max_bytes` (a tail's shapes come from data: an error, not an exhausted machine).
// Float Gemms without transposes run on the matrix kernels (on `pool`, which may be null).
Status run_tail(const ir::Graph& tail, const std::vector<interp::TensorRef>& inputs, std::vector<HostTensor>* outputs,
                std::size_t max_bytes, pthreadpool_t pool = nullptr);

}  // namespace systolic::runtime
