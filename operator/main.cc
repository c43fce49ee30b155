// ddp-operator: dispatches to the registered subcommands (see command.h).
#include <cstdio>
#include <cstring>
#include <string>

#include "common/fd_limit.h"
#include "common/version.h"
#include "operator/command.h"

namespace ddp::controller {

std::vector<Command>& MutableCommands() {
  static std::vector<Command> commands;
  return commands;
}
bool RegisterCommand(const Command& command) {
  MutableCommands().push_back(command);
  return true;
}
const std::vector<Command>& Commands() { return MutableCommands(); }

}  // namespace ddp::controller

namespace {
void PrintUsage(FILE* out) {
  std::fprintf(out, "usage: ddp-operator <command> [flags]\n\ncommands:\n");
  for (const auto& c : ddp::controller::Commands()) {
    std::fprintf(out, "  %-10s %s\n", c.name.c_str(), c.summary.c_str());
  }
  std::fprintf(out, "\n`ddp-operator <command> --help` describes a command's flags;\n"
                    "`ddp-operator --version` prints the release.\n");
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "help") || !std::strcmp(argv[1], "--help") ||
      !std::strcmp(argv[1], "-h")) {
    PrintUsage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (!std::strcmp(argv[1], "--version")) {
    std::printf("ddp-operator %s\n", ddp::Version());
    return 0;
  }
  for (const auto& c : ddp::controller::Commands()) {
    if (c.name != argv[1]) continue;
    // The long-running commands (the image runs `run`; `local` runs a job's pods as its
    // children, which inherit the limit) watch and serve many connections; the others print
    // for a user and leave, so they raise it without a log line.
    if (c.name == "run" || c.name == "local") {
      ddp::RaiseFileLimitAndLog("ddp-operator " + c.name);
    } else {
      (void)ddp::RaiseFileLimit();
    }
    return c.main(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "ddp-operator: unknown command \"%s\"\n", argv[1]);
  PrintUsage(stderr);
  return 2;
}
