// Reading DDPJob manifests from a file or standard input, for the user commands.
#ifndef DDP_OPERATOR_API_MANIFEST_FILE_H_
#define DDP_OPERATOR_API_MANIFEST_FILE_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "operator/api/types.h"

namespace ddp::api {

// The whole content of `path`, or of standard input when path is "-".
// NotFound names the path when it cannot be opened.
StatusOr<std::string> ReadManifestText(const std::string& path);

// One YAML document of a manifest file, parsed and defaulted, or the reason it is not a DDPJob.
struct ManifestDocument {
  int index = 0;           // 1-based position in the stream
  std::string label;       // "document 2 (mingpt)" for messages
  Status parse_status;     // not OK when the document is not a readable DDPJob
  std::string other_kind;  // set (and the document ignored) when its kind is not DDPJob
  DDPJob job;              // defaulted; meaningful only when parse_status is OK
};

// Every document of `text`. Documents of other kinds (a PVC next to the job) are reported with
// other_kind set so commands can skip them. A YAML syntax error fails the whole stream.
StatusOr<std::vector<ManifestDocument>> ParseManifestDocuments(const std::string& text);

// ReadManifestText + ParseManifestDocuments, what `validate` and `render` share. On error the
// message is the whole line to print: "<command>: cannot open <path>" when the file cannot be
// read, "<path>: <reason>" when the YAML stream does not parse.
StatusOr<std::vector<ManifestDocument>> LoadManifest(const std::string& command,
                                                     const std::string& path);

// Why a DDPJob document cannot be used: its parse error, else every unknown field (strict field
// validation against the compiled-in CRD, as the API server's) and every validation problem;
// empty when it is a valid job. REQUIRES: doc.other_kind is empty (a DDPJob document).
std::vector<std::string> DocumentProblems(const ManifestDocument& doc);

}  // namespace ddp::api

#endif  // DDP_OPERATOR_API_MANIFEST_FILE_H_
