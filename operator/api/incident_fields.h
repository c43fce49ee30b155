// JSON <-> struct for status.incidents, status.incidentsTotal and status.goodput. Internal to
// operator/api: serialize.cc calls these. The operator alone writes them, so a row that is not
// one it would write (hand-edited, an older or newer operator's) is dropped, never an error:
// forgetting an incident loses a line of history, not the job.
#ifndef DDP_OPERATOR_API_INCIDENT_FIELDS_H_
#define DDP_OPERATOR_API_INCIDENT_FIELDS_H_

#include <nlohmann/json.hpp>

#include "operator/api/types.h"

namespace ddp::api::internal {

// Fills out->incidents (the newest kMaxIncidents valid rows, oldest first), incidents_total
// (at least the rows kept) and goodput from `status`. Never fails.
void ParseIncidents(const nlohmann::json& status, DDPJobStatus* out);

// Writes the three fields into `out` (an object); absent when empty or zero.
void IncidentsToJson(const DDPJobStatus& s, nlohmann::json* out);

// One row, as written (seconds rounded to milliseconds, texts sanitized and cut).
nlohmann::json IncidentToJson(const Incident& i);
// One row back; false when it is malformed (unknown kind or outcome, a bad time, a negative or
// non-finite figure, a text too long).
bool ParseIncident(const nlohmann::json& row, Incident* out);

}  // namespace ddp::api::internal

#endif  // DDP_OPERATOR_API_INCIDENT_FIELDS_H_
