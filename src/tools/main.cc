// The systolic command line: thin subcommands over the library.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "tools/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"systolic: a hardware-aware inference compiler and runtime"};
  app.require_subcommand(1);
  systolic::tools::register_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    // A bad flag or value: one line, like every other error.
    std::fprintf(stderr, "systolic: error: %s (see systolic %s--help)\n", e.what(),
                 app.get_subcommands().empty() ? "" : (app.get_subcommands()[0]->get_name() + " ").c_str());
    return 1;
  }
  return systolic::tools::exit_code();
}
