// Test helpers for the delivery tests: read files of the source tree and parse YAML into JSON.
// The source root comes from the DDP_SOURCE_DIR compile definition (tests/delivery/CMakeLists.txt).
#ifndef DDP_TESTS_DELIVERY_REPO_FILES_H_
#define DDP_TESTS_DELIVERY_REPO_FILES_H_

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "operator/api/yaml_json.h"

namespace ddp::delivery {

inline std::string SourcePath(const std::string& rel) { return std::string(DDP_SOURCE_DIR) + "/" + rel; }

// The file's bytes; fails the current test (and returns "") when it cannot be read.
inline std::string ReadSource(const std::string& rel) {
  std::ifstream in(SourcePath(rel), std::ios::binary);
  if (!in) {
    ADD_FAILURE() << "cannot read " << rel;
    return "";
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every YAML document of the file as JSON; fails the test naming the file on a syntax error.
inline std::vector<nlohmann::json> ReadYamlDocs(const std::string& rel) {
  auto docs = api::ParseYamlDocuments(ReadSource(rel));
  if (!docs.ok()) {
    ADD_FAILURE() << rel << ": " << docs.status().ToString();
    return {};
  }
  return *docs;
}

}  // namespace ddp::delivery

#endif  // DDP_TESTS_DELIVERY_REPO_FILES_H_
