// The DDPJob CRD (crds/ddpjob.yaml), compiled into the binary so the commands and the controller
// check objects against the schema the API server enforces, not against a second list of fields.
#ifndef DDP_OPERATOR_API_CRD_SCHEMA_H_
#define DDP_OPERATOR_API_CRD_SCHEMA_H_

#include <nlohmann/json.hpp>

namespace ddp::api {

// The text of crds/ddpjob.yaml as of the build (a CMake-generated source).
extern const char kDDPJobCrdYaml[];

// spec.versions[0].schema.openAPIV3Schema of that CRD, parsed on first use. Thread-safe; the
// reference stays valid for the life of the process. A CRD that does not parse is a build
// defect: tests/operator checks it, and this returns an empty object then (nothing is unknown).
const nlohmann::json& DDPJobSchema();

}  // namespace ddp::api

#endif  // DDP_OPERATOR_API_CRD_SCHEMA_H_
