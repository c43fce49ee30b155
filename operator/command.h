// Subcommands of ddp-operator. Each cmd_*.cc registers one at static-initialization time, so
// main.cc lists no command and a component adds its command without touching shared files.
#ifndef DDP_OPERATOR_COMMAND_H_
#define DDP_OPERATOR_COMMAND_H_

#include <string>
#include <vector>

namespace ddp::controller {

struct Command {
  std::string name;     // "validate"
  std::string summary;  // one line for `ddp-operator help`
  // argv[0] is the command name. Returns the process exit code.
  int (*main)(int argc, char** argv);
};

// Returns true so it can initialize a namespace-scope constant:
//   const bool kRegistered = RegisterCommand({"validate", "check manifests", &ValidateMain});
bool RegisterCommand(const Command& command);
const std::vector<Command>& Commands();

}  // namespace ddp::controller

#endif  // DDP_OPERATOR_COMMAND_H_
