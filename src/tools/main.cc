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
    return app.exit(e);
  }
  return systolic::tools::exit_code();
}
