// Manifest input for `validate` and `render`.
#include "operator/api/manifest_file.h"

#include <fstream>
#include <iostream>

#include "operator/api/serialize.h"
#include "operator/api/validate.h"
#include "operator/api/yaml_json.h"

namespace ddp::api {

namespace {

// Reads at most kMaxYamlBytes: a bigger input is refused before it is held in memory.
StatusOr<std::string> ReadBounded(std::istream& in, const std::string& name) {
  std::string out;
  char buf[64 << 10];
  while (in) {
    in.read(buf, sizeof(buf));
    out.append(buf, static_cast<size_t>(in.gcount()));
    if (out.size() > kMaxYamlBytes) {
      return Status::InvalidArgument(name + " is larger than " +
                                     std::to_string(kMaxYamlBytes >> 20) +
                                     " MiB: not a manifest");
    }
  }
  if (in.bad()) return Status::DataLoss("cannot read " + name);
  return out;
}

}  // namespace

StatusOr<std::string> ReadManifestText(const std::string& path) {
  if (path == "-") return ReadBounded(std::cin, "standard input");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot open " + path);
  return ReadBounded(in, path);
}

StatusOr<std::vector<ManifestDocument>> ParseManifestDocuments(const std::string& text) {
  StatusOr<std::vector<nlohmann::json>> docs = ParseYamlDocuments(text);
  if (!docs.ok()) return docs.status();
  std::vector<ManifestDocument> out;
  for (size_t i = 0; i < docs->size(); ++i) {
    const nlohmann::json& doc = (*docs)[i];
    ManifestDocument m;
    m.index = static_cast<int>(i + 1);
    m.label = "document " + std::to_string(m.index);
    if (doc.is_object() && doc.contains("metadata") && doc["metadata"].is_object() &&
        doc["metadata"].value("name", nlohmann::json()).is_string()) {
      m.label += " (" + doc["metadata"]["name"].get<std::string>() + ")";
    }
    if (!doc.is_object() || !doc.contains("kind")) {
      m.parse_status = Status::InvalidArgument("kind is required (expected \"DDPJob\")");
    } else if (doc["kind"] == kKind && !doc.contains("apiVersion")) {
      m.parse_status = Status::InvalidArgument(std::string("apiVersion is required (expected \"") +
                                               kApiVersion + "\")");
    } else if (doc["kind"] != kKind) {
      m.other_kind = doc["kind"].is_string() ? doc["kind"].get<std::string>() : doc["kind"].dump();
    } else {
      StatusOr<DDPJob> job = ParseDDPJobJson(doc);
      if (job.ok()) {
        m.job = std::move(job).value();
        ApplyDefaults(&m.job);
      } else {
        m.parse_status = job.status();
      }
    }
    out.push_back(std::move(m));
  }
  return out;
}

StatusOr<std::vector<ManifestDocument>> LoadManifest(const std::string& command,
                                                     const std::string& path) {
  StatusOr<std::string> text = ReadManifestText(path);
  if (!text.ok()) return Status(text.status().code(), command + ": " + text.status().message());
  StatusOr<std::vector<ManifestDocument>> docs = ParseManifestDocuments(*text);
  if (!docs.ok()) return Status(docs.status().code(), path + ": " + docs.status().message());
  return docs;
}

std::vector<std::string> DocumentProblems(const ManifestDocument& doc) {
  if (!doc.parse_status.ok()) return {doc.parse_status.message()};
  return Validate(doc.job);
}

}  // namespace ddp::api
