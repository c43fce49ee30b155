// The compiled-in CRD's schema; see crd_schema.h.
#include "operator/api/crd_schema.h"

#include <string>

#include "operator/api/yaml_json.h"

namespace ddp::api {

const nlohmann::json& DDPJobSchema() {
  static const nlohmann::json schema = [] {
    StatusOr<std::vector<nlohmann::json>> docs = ParseYamlDocuments(kDDPJobCrdYaml);
    if (!docs.ok() || docs->size() != 1) return nlohmann::json::object();
    const nlohmann::json ptr_target =
        (*docs)[0].value(nlohmann::json::json_pointer("/spec/versions/0/schema/openAPIV3Schema"),
                         nlohmann::json::object());
    return ptr_target.is_object() ? ptr_target : nlohmann::json::object();
  }();
  return schema;
}

}  // namespace ddp::api
