// Manifest input for `validate` and `render`.
#include "operator/api/manifest_file.h"

#include <cctype>
#include <fstream>
#include <iostream>

#include "operator/api/serialize.h"
#include "operator/api/unknown_fields.h"
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

namespace {

bool IsListKind(const nlohmann::json& doc) {
  if (!doc.is_object() || !doc.contains("items")) return false;
  const nlohmann::json kind = doc.value("kind", nlohmann::json());
  return kind == "List" || kind == std::string(kKind) + "List";
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// One object of the stream (a document, or an item of a List) as a ManifestDocument.
ManifestDocument ReadDocument(const nlohmann::json& doc, int index, std::string label) {
  ManifestDocument m;
  m.index = index;
  if (doc.is_object() && doc.contains("metadata") && doc["metadata"].is_object() &&
      doc["metadata"].value("name", nlohmann::json()).is_string()) {
    const nlohmann::json& meta = doc["metadata"];
    const nlohmann::json ns = meta.value("namespace", nlohmann::json());
    label += " (" + (ns.is_string() ? ns.get<std::string>() + "/" : "") +
             meta["name"].get<std::string>() + ")";
  }
  m.label = std::move(label);
  const std::string api_version =
      doc.is_object() && doc.value("apiVersion", nlohmann::json()).is_string()
          ? doc["apiVersion"].get<std::string>()
          : "";
  if (!doc.is_object() || !doc.contains("kind")) {
    m.parse_status = Status::InvalidArgument("kind is required (expected \"DDPJob\")");
  } else if (doc["kind"] == kKind && !doc.contains("apiVersion")) {
    m.parse_status = Status::InvalidArgument(std::string("apiVersion is required (expected \"") +
                                             kApiVersion + "\")");
  } else if (doc["kind"] != kKind) {
    m.other_kind = doc["kind"].is_string() ? doc["kind"].get<std::string>() : doc["kind"].dump();
    // A misspelt DDPJob is an error, not another kind to skip: it would pass unchecked.
    if (Lower(m.other_kind) == Lower(kKind) || api_version.rfind(kGroup + std::string("/"), 0) == 0) {
      m.parse_status = Status::InvalidArgument("kind " + m.other_kind + " (apiVersion \"" +
                                               api_version + "\") is not a kind of this "
                                               "operator: did you mean DDPJob?");
      m.other_kind.clear();
    }
  } else {
    StatusOr<DDPJob> job = ParseDDPJobJson(doc);
    if (job.ok()) {
      m.job = std::move(job).value();
      ApplyDefaults(&m.job);
    } else {
      m.parse_status = job.status();
    }
  }
  return m;
}

}  // namespace

StatusOr<std::vector<ManifestDocument>> ParseManifestDocuments(const std::string& text) {
  StatusOr<std::vector<nlohmann::json>> docs = ParseYamlDocuments(text);
  if (!docs.ok()) return docs.status();
  std::vector<ManifestDocument> out;
  for (size_t i = 0; i < docs->size(); ++i) {
    const nlohmann::json& doc = (*docs)[i];
    const int index = static_cast<int>(i + 1);
    const std::string label = "document " + std::to_string(index);
    if (!IsListKind(doc)) {
      out.push_back(ReadDocument(doc, index, label));
      continue;
    }
    // `kubectl get ddpj -A -o yaml`: a v1 List; each item is read as a document of its own.
    const nlohmann::json& items = doc["items"];
    if (!items.is_array()) {
      ManifestDocument m;
      m.index = index;
      m.label = label;
      m.parse_status = Status::InvalidArgument("items of a List must be a list");
      out.push_back(std::move(m));
    } else if (items.empty()) {
      ManifestDocument m;
      m.index = index;
      m.label = label + " (a List with no items)";
      m.other_kind = doc["kind"].get<std::string>();
      out.push_back(std::move(m));
    }
    for (size_t k = 0; items.is_array() && k < items.size(); ++k) {
      out.push_back(ReadDocument(items[k], index, label + ", item " + std::to_string(k + 1)));
    }
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
  std::vector<std::string> problems = UnknownFieldProblems(doc.job.raw);
  for (std::string& p : Validate(doc.job)) problems.push_back(std::move(p));
  return problems;
}

}  // namespace ddp::api
