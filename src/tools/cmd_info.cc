// `systolic info`: the detected target, the measured peak of each precision's instructions and
// which kernel each precision runs here (the library's host_info()).
#include <cstdio>

#include "systolic/systolic.h"
#include "tools/commands.h"

namespace systolic::tools {

void register_info(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "print the detected hardware target, its measured peaks and kernels");
  cmd->callback([] { std::fputs(host_info().c_str(), stdout); });
}

}  // namespace systolic::tools
