// `ddp-operator validate -f FILE|-`: checks DDPJob manifests. Exit 0 when every DDPJob document
// is valid (other kinds are skipped, said on stderr); 1 with one problem per line otherwise, or
// when FILE holds no document at all; 2 on a usage error.
#include <cstdio>
#include <cstring>
#include <string>

#include "operator/api/manifest_file.h"
#include "operator/command.h"

namespace ddp::controller {
namespace {

const char kUsage[] =
    "usage: ddp-operator validate -f FILE|-\n"
    "  -f, --filename FILE  the manifest; - reads standard input\n"
    "Checks every DDPJob document in FILE. A v1 List (kubectl get ddpj -A -o yaml) is read item\n"
    "by item; documents of other kinds (a PersistentVolumeClaim) are skipped, and a file of\n"
    "only other kinds is valid: it holds no DDPJob to refuse.\n"
    "Exit status: 0 valid, 1 problems (one per line) or no document at all, 2 usage error.\n";

int ValidateMain(int argc, char** argv) {
  std::string file;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if ((arg == "-f" || arg == "--filename") && i + 1 < argc) {
      file = argv[++i];
    } else {
      std::fprintf(stderr, "validate: unexpected argument \"%s\"\n%s", arg.c_str(), kUsage);
      return 2;
    }
  }
  if (file.empty()) {
    std::fprintf(stderr, "validate: -f FILE is required\n%s", kUsage);
    return 2;
  }
  StatusOr<std::vector<api::ManifestDocument>> docs = api::LoadManifest("validate", file);
  if (!docs.ok()) {
    std::fprintf(stderr, "%s\n", docs.status().message().c_str());
    return 1;
  }
  if (docs->empty()) {
    std::fprintf(stderr, "%s: no documents\n", file.c_str());
    return 1;
  }
  int problems = 0;
  size_t jobs = 0, others = 0;
  for (const auto& doc : *docs) {
    if (!doc.other_kind.empty()) {
      std::fprintf(stderr, "%s: kind %s is not a DDPJob; skipped\n", doc.label.c_str(),
                   doc.other_kind.c_str());
      ++others;
      continue;
    }
    ++jobs;
    for (const std::string& p : api::DocumentProblems(doc)) {
      std::printf("%s: %s\n", doc.label.c_str(), p.c_str());
      ++problems;
    }
  }
  if (problems > 0) return 1;
  if (jobs == 0) {
    std::printf("%s: no DDPJob documents (%zu of other kinds skipped): nothing to refuse\n",
                file.c_str(), others);
    return 0;
  }
  std::printf("%s: %zu DDPJob document%s valid\n", file.c_str(), jobs, jobs == 1 ? "" : "s");
  return 0;
}

const bool kRegistered =
    RegisterCommand({"validate", "check DDPJob manifests (-f FILE|-)", &ValidateMain});

}  // namespace
}  // namespace ddp::controller
