// Fuzz target: a manifest as a user or a tenant writes it, YAML or JSON, through everything the
// operator does with one: the manifest reader (validate and render), ParseDDPJobJson (the
// controller's path for objects from the API server), Validate, PlanReconcile, the builders
// and the JSON writes. Any exception or crash is a finding: the operator must answer every input
// with an error or a plan.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "operator/api/manifest_file.h"
#include "operator/api/serialize.h"
#include "operator/api/validate.h"
#include "operator/plan/builders.h"
#include "operator/plan/plan.h"

namespace {

using nlohmann::json;

// Everything the operator would send for `job` must serialize (dump throws on bad UTF-8).
void Exercise(ddp::api::DDPJob job) {
  job.uid = "fuzz-uid";
  ddp::api::ApplyDefaults(&job);
  const std::vector<std::string> problems = ddp::api::Validate(job);
  for (const std::string& p : problems) json(p).dump();
  const ddp::plan::Plan plan = ddp::plan::PlanReconcile(
      job, ddp::plan::Observed{}, ddp::api::TimePoint(std::chrono::seconds(1700000000)));
  if (plan.status) ddp::api::StatusToJson(*plan.status).dump();
  for (const json& c : plan.creates) c.dump();
  for (const auto& e : plan.events) json(e.message).dump();
  ddp::api::ToJson(job).dump();
  if (!problems.empty()) return;
  // Only valid jobs reach the builders in the operator; build one of each kind.
  const int n = job.spec.replicas;
  ddp::plan::BuildWorkerPod(job, n - 1, 1, n).dump();
  ddp::plan::BuildSparePod(job, 0, 1, n).dump();
  ddp::plan::BuildRendezvousPod(job, 1, n).dump();
  ddp::plan::BuildService(job).dump();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // As `validate` and `render` read a file (YAML, of which JSON is a subset).
  auto docs = ddp::api::ParseManifestDocuments(text);
  if (docs.ok()) {
    for (const auto& doc : *docs) {
      ddp::api::DocumentProblems(doc);
      if (doc.parse_status.ok() && doc.other_kind.empty()) Exercise(doc.job);
    }
  }
  // As the controller reads an object from the API server (JSON, UTF-8 checked by the parser).
  const json obj = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (obj.is_object()) {
    auto job = ddp::api::ParseDDPJobJson(obj);
    if (job.ok()) Exercise(*job);
  }
  return 0;
}
