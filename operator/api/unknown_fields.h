// Strict field validation, as the API server does it (fieldValidation=Strict): every field of an
// object that its structural schema does not declare, with the nearest declared name. Pure;
// thread-compatible.
#ifndef DDP_OPERATOR_API_UNKNOWN_FIELDS_H_
#define DDP_OPERATOR_API_UNKNOWN_FIELDS_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ddp::api {

struct UnknownField {
  std::string path;     // "spec.template.spec.containers[0].prots"
  std::string nearest;  // the declared sibling closest to the name ("ports"); "" when none
  bool close = false;   // nearest is a likely misspelling (small edit distance)
  bool operator==(const UnknownField& o) const {
    return path == o.path && nearest == o.nearest && close == o.close;
  }
};

// The unknown fields of `value` under `schema` (an OpenAPI v3 structural schema: properties,
// additionalProperties, items, x-kubernetes-preserve-unknown-fields), in key order.
// `path` is value's own path ("" for a root object). An object schema without properties and
// additionalProperties (the root's metadata) and one that preserves unknown fields accept any
// key; values of the wrong JSON type are not this function's business (the parsers report them).
std::vector<UnknownField> FindUnknownFields(const nlohmann::json& value,
                                            const nlohmann::json& schema,
                                            const std::string& path = "");

// The declared name closest to `name` by edit distance (case-insensitive), "" when `names` is
// empty. Ties go to the first in `names`' order.
std::string NearestName(const std::string& name, const std::vector<std::string>& names);

// One message per unknown field of a DDPJob object (its top-level keys, spec and the pod
// template; status is the operator's to write and is not checked), against the compiled-in CRD:
//   unknown field "spec.failurePolicy.livenessTimeoutSecond" (did you mean livenessTimeoutSeconds?)
//   unknown field "spec.foo" (not a field of spec; the nearest is elastic)
std::vector<std::string> UnknownFieldProblems(const nlohmann::json& object);

}  // namespace ddp::api

#endif  // DDP_OPERATOR_API_UNKNOWN_FIELDS_H_
