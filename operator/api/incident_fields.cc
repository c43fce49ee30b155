// status.incidents, status.incidentsTotal and status.goodput on the wire (see incident_fields.h).
#include "operator/api/incident_fields.h"

#include <algorithm>
#include <cmath>

#include "operator/api/time_format.h"
#include "operator/api/utf8.h"

namespace ddp::api::internal {
namespace {

using nlohmann::json;

constexpr size_t kMaxName = 253;  // a pod or node name (DNS subdomain)
constexpr double kMaxSeconds = 1e9;

double Millis(double v) { return std::round(v * 1000.0) / 1000.0; }
// Seconds as written: within what the reader accepts (Seconds below), so a figure the writer
// took is never one the reader drops (with the row, or the goodput with it).
double BoundedMillis(double v) {
  return Millis(std::isfinite(v) ? std::min(std::max(v, 0.0), kMaxSeconds) : 0.0);
}

bool OneOf(const std::string& s, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (s == n) return true;
  }
  return false;
}

bool KnownKind(const std::string& k) {
  return OneOf(k, {kIncidentTrainerExit, kIncidentPodLost, kIncidentNodeLost, kIncidentDrain,
                   kIncidentHang, kIncidentResize});
}

bool KnownOutcome(const std::string& o) {
  return o.empty() || OneOf(o, {kOutcomeHealedInPlace, kOutcomeSpareTookRank, kOutcomeShrank,
                                kOutcomeGrew, kOutcomeNewRound, kOutcomeFailed});
}

// A string at `key` no longer than `max` bytes ("" when absent); false when it is something else.
bool Text(const json& row, const char* key, size_t max, std::string* out) {
  auto it = row.find(key);
  if (it == row.end() || it->is_null()) return true;
  if (!it->is_string()) return false;
  *out = it->get<std::string>();
  return out->size() <= max;
}

// A whole number in [lo, hi] at `key` (unchanged when absent).
template <typename T>
bool Whole(const json& row, const char* key, int64_t lo, int64_t hi, T* out) {
  auto it = row.find(key);
  if (it == row.end() || it->is_null()) return true;
  if (!it->is_number_integer()) return false;
  const int64_t v = it->get<int64_t>();
  if (v < lo || v > hi) return false;
  *out = static_cast<T>(v);
  return true;
}

// Seconds: finite, >= 0, below kMaxSeconds (unchanged when absent).
bool Seconds(const json& row, const char* key, std::optional<double>* out) {
  auto it = row.find(key);
  if (it == row.end() || it->is_null()) return true;
  if (!it->is_number()) return false;
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < 0 || v > kMaxSeconds) return false;
  *out = v;
  return true;
}

}  // namespace

json IncidentToJson(const Incident& i) {
  json r = {{"kind", i.kind}, {"rank", i.rank}, {"round", i.round}, {"time", FormatTime(i.time)},
            {"step", i.step}};
  if (!i.pod.empty()) r["pod"] = SanitizeUtf8(TruncateUtf8(i.pod, kMaxName));
  if (!i.pod_uid.empty()) r["podUID"] = SanitizeUtf8(TruncateUtf8(i.pod_uid, kMaxName));
  if (!i.node.empty()) r["node"] = SanitizeUtf8(TruncateUtf8(i.node, kMaxName));
  if (i.incarnation > 0) r["incarnation"] = i.incarnation;
  if (i.local_rank >= 0) r["localRank"] = i.local_rank;
  if (i.detection_seconds) r["detectionSeconds"] = BoundedMillis(*i.detection_seconds);
  if (i.stall_seconds) r["stallSeconds"] = BoundedMillis(*i.stall_seconds);
  if (i.steps_lost) r["stepsLost"] = *i.steps_lost;
  if (!i.outcome.empty()) r["outcome"] = i.outcome;
  if (!i.source.empty()) r["source"] = i.source;
  if (!i.message.empty()) {
    r["message"] = SanitizeUtf8(TruncateUtf8(i.message, kMaxIncidentMessage));
  }
  return r;
}

bool ParseIncident(const json& row, Incident* out) {
  if (!row.is_object()) return false;
  Incident i;
  std::string time;
  if (!Text(row, "kind", 32, &i.kind) || !KnownKind(i.kind)) return false;
  if (!Text(row, "outcome", 32, &i.outcome) || !KnownOutcome(i.outcome)) return false;
  if (!Text(row, "source", 32, &i.source) ||
      !(i.source.empty() || i.source == kSourceWorkers || i.source == kSourceOperator)) {
    return false;
  }
  if (!Text(row, "pod", kMaxName, &i.pod) || !Text(row, "podUID", kMaxName, &i.pod_uid) ||
      !Text(row, "node", kMaxName, &i.node) ||
      !Text(row, "message", kMaxIncidentMessage, &i.message) || !Text(row, "time", 64, &time)) {
    return false;
  }
  StatusOr<TimePoint> t = ParseTime(time);
  if (!t.ok()) return false;
  i.time = *t;
  constexpr int64_t kMaxRank = 1 << 20, kMaxCount = 1000000000, kMaxStep = int64_t{1} << 53;
  if (!Whole(row, "rank", -1, kMaxRank, &i.rank) || !Whole(row, "round", 0, kMaxCount, &i.round) ||
      !Whole(row, "incarnation", 0, kMaxCount, &i.incarnation) ||
      !Whole(row, "localRank", -1, kMaxRank, &i.local_rank) ||
      !Whole(row, "step", 0, kMaxStep, &i.step)) {
    return false;
  }
  int64_t lost = -1;
  if (!Whole(row, "stepsLost", 0, kMaxStep, &lost)) return false;
  if (lost >= 0) i.steps_lost = lost;
  if (!Seconds(row, "detectionSeconds", &i.detection_seconds) ||
      !Seconds(row, "stallSeconds", &i.stall_seconds)) {
    return false;
  }
  *out = std::move(i);
  return true;
}

void ParseIncidents(const json& status, DDPJobStatus* out) {
  out->incidents.clear();
  auto list = status.find("incidents");
  if (list != status.end() && list->is_array()) {
    for (const json& row : *list) {
      Incident i;
      if (ParseIncident(row, &i)) out->incidents.push_back(std::move(i));
    }
    if (out->incidents.size() > kMaxIncidents) {
      out->incidents.erase(out->incidents.begin(),
                           out->incidents.end() - static_cast<std::ptrdiff_t>(kMaxIncidents));
    }
  }
  int64_t total = 0;
  auto t = status.find("incidentsTotal");
  if (t != status.end() && t->is_number_integer() && t->get<int64_t>() >= 0) total = t->get<int64_t>();
  out->incidents_total = std::max<int64_t>(total, static_cast<int64_t>(out->incidents.size()));
  out->goodput = Goodput{};
  auto g = status.find("goodput");
  if (g != status.end() && g->is_object()) {
    std::optional<double> stalled, resumed;
    if (Seconds(*g, "stalledSeconds", &stalled) && stalled) out->goodput.stalled_seconds = *stalled;
    auto r = g->find("resumedAt");
    if (r != g->end() && r->is_number() && std::isfinite(r->get<double>()) && r->get<double>() > 0) {
      out->goodput.resumed_at = r->get<double>();
    }
    auto u = g->find("unclaimed");
    if (u != g->end() && u->is_object()) {
      std::optional<double> end, stall, detection;
      auto e = u->find("end");
      if (e != u->end() && e->is_number() && std::isfinite(e->get<double>()) && e->get<double>() > 0 &&
          Seconds(*u, "stallSeconds", &stall) && stall && Seconds(*u, "detectionSeconds", &detection)) {
        out->goodput.unclaimed_end = e->get<double>();
        out->goodput.unclaimed_stall = *stall;
        out->goodput.unclaimed_detection = detection;
      }
    }
  }
}

void IncidentsToJson(const DDPJobStatus& s, json* out) {
  if (!s.incidents.empty()) {
    json list = json::array();
    for (const Incident& i : s.incidents) list.push_back(IncidentToJson(i));
    (*out)["incidents"] = list;
  }
  if (s.incidents_total > 0) (*out)["incidentsTotal"] = s.incidents_total;
  if (!(s.goodput == Goodput{})) {
    json g = {{"stalledSeconds", BoundedMillis(s.goodput.stalled_seconds)}};
    if (s.goodput.resumed_at > 0) g["resumedAt"] = Millis(s.goodput.resumed_at);
    if (s.goodput.unclaimed_end > 0) {
      nlohmann::json u = {{"end", Millis(s.goodput.unclaimed_end)},
                          {"stallSeconds", Millis(s.goodput.unclaimed_stall)}};
      if (s.goodput.unclaimed_detection) u["detectionSeconds"] = Millis(*s.goodput.unclaimed_detection);
      g["unclaimed"] = u;
    }
    (*out)["goodput"] = g;
  }
}

}  // namespace ddp::api::internal
