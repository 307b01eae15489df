// Fuzz target: the plan loader followed by creating a Session and running it once on zeros.
// The input is a plan without its trailing checksum: the target seals it, so mutations reach
// the parser instead of stopping at the checksum. Plans whose arena or inputs exceed the
// fuzzer's memory budget are not run (the Session's own limit is the machine's memory).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "plan/program.h"
#include "runtime/session.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace systolic;
  std::string bytes(reinterpret_cast<const char*>(data), size);
  const uint64_t sum = plan::plan_checksum(bytes.data(), bytes.size());
  bytes.append(reinterpret_cast<const char*>(&sum), sizeof sum);
  auto p = plan::load_program_bytes(bytes);
  if (!p.ok()) return 0;
  constexpr int64_t kBudget = int64_t{256} << 20;
  if ((*p)->graph.arena_bytes > kBudget) return 0;
  runtime::SessionOptions so;
  so.threads = 1;
  so.tail_max_bytes = static_cast<std::size_t>(kBudget);  // a dynamic tail's tensors, made as it runs
  auto s = runtime::Session::create(*p, so);
  if (!s.ok()) return 0;
  std::vector<std::vector<uint8_t>> in, out;
  std::vector<const void*> ip;
  std::vector<void*> op;
  int64_t total = 0;
  for (const auto& t : (*s)->inputs()) total += static_cast<int64_t>(t.bytes());
  for (const auto& t : (*s)->outputs()) total += static_cast<int64_t>(t.bytes());
  if (total > kBudget) return 0;
  for (const auto& t : (*s)->inputs()) ip.push_back(in.emplace_back(t.bytes()).data());
  for (const auto& t : (*s)->outputs()) op.push_back(out.emplace_back(t.bytes()).data());
  (void)(*s)->run_into(ip, op);
  if ((*p)->tail) {  // outputs shaped by the run: run_into refuses them, run_dynamic makes them
    std::vector<runtime::HostTensor> shaped;
    (void)(*s)->run_dynamic(ip, &shaped);
  }
  return 0;
}
