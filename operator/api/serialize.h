// DDPJob <-> JSON (the API server's form) and YAML (files). Errors name the field and the value.
// Unknown fields are never dropped: DDPJob::raw keeps the object as received, ToJson overlays.
#ifndef DDP_OPERATOR_API_SERIALIZE_H_
#define DDP_OPERATOR_API_SERIALIZE_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "operator/api/types.h"

namespace ddp::api {

// Parses one DDPJob object. Absent fields keep the struct defaults (see types.h); does NOT call
// ApplyDefaults. Returns InvalidArgument naming the field on a type error
// ("spec.replicas: expected an integer, got \"four\"") or on a wrong apiVersion/kind.
StatusOr<DDPJob> ParseDDPJobJson(const nlohmann::json& object);

// Parses every document of a YAML stream (empty documents are skipped). Each must be a DDPJob.
// Errors are prefixed with the document index: "document 1: spec.replicas: ...".
StatusOr<std::vector<DDPJob>> ParseDDPJobYaml(const std::string& text);

// The whole object: job.raw with metadata name/namespace, spec (known fields overlaid on the
// received spec, so unknown spec fields survive) and status (StatusToJson) written in.
nlohmann::json ToJson(const DDPJob& job);

// status as the API server stores it (camelCase, RFC 3339 times, absent optionals omitted).
nlohmann::json StatusToJson(const DDPJobStatus& status);
// Inverse of StatusToJson. Unknown status fields are ignored.
StatusOr<DDPJobStatus> ParseStatusJson(const nlohmann::json& status);
// spec as JSON (known fields only, overlaid on `base`, typically raw["spec"]).
nlohmann::json SpecToJson(const DDPJobSpec& spec, nlohmann::json base = nlohmann::json::object());

}  // namespace ddp::api

#endif  // DDP_OPERATOR_API_SERIALIZE_H_
