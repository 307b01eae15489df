// Random input buffers for a session.
#include "api/random_inputs.h"

namespace systolic::api {

IoBuffers make_io_buffers(const runtime::Session& s, uint64_t first_seed) {
  IoBuffers io;
  for (const auto& info : s.inputs()) io.in.push_back(random_tensor(info, first_seed++));
  for (const auto& info : s.outputs())  // one shaped by the run gets no buffer (run_once allocates it)
    io.out.push_back(info.dynamic() ? runtime::HostTensor{info.dtype, {0}, {}} : runtime::HostTensor::zeros(info.dtype, info.shape));
  for (const auto& t : io.in) io.in_ptrs.push_back(t.data.data());
  for (auto& t : io.out) io.out_ptrs.push_back(t.data.data());
  return io;
}

}  // namespace systolic::api
