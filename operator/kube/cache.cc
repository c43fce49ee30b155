#include "operator/kube/cache.h"

#include <optional>

namespace ddp::controller {

std::string ObjectKey(const nlohmann::json& obj) {
  auto m = obj.find("metadata");
  if (m == obj.end() || !m->is_object()) return "";
  std::string name = m->value("name", "");
  std::string ns = m->value("namespace", "");
  return ns.empty() ? name : ns + "/" + name;
}

std::string ResourceVersionOf(const nlohmann::json& obj) {
  auto m = obj.find("metadata");
  if (m == obj.end() || !m->is_object()) return "";
  auto rv = m->find("resourceVersion");
  return rv != m->end() && rv->is_string() ? rv->get<std::string>() : "";
}

int64_t GenerationOf(const nlohmann::json& obj) {
  auto m = obj.find("metadata");
  if (m == obj.end() || !m->is_object()) return 0;
  auto g = m->find("generation");
  return g != m->end() && g->is_number_integer() ? g->get<int64_t>() : 0;
}

namespace {
// A decimal resourceVersion as a number, or nullopt.
std::optional<uint64_t> Revision(const std::string& rv) {
  if (rv.empty() || rv.size() > 19 || rv.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  return std::stoull(rv);
}
}  // namespace

bool CachedIsNewer(const nlohmann::json& cached, const nlohmann::json& incoming) {
  std::optional<uint64_t> a = Revision(ResourceVersionOf(cached));
  std::optional<uint64_t> b = Revision(ResourceVersionOf(incoming));
  if (a && b) return *a > *b;
  return GenerationOf(cached) > GenerationOf(incoming);
}

std::string JobKeyFromLabel(const nlohmann::json& obj, const std::string& label_key) {
  auto m = obj.find("metadata");
  if (m == obj.end() || !m->is_object()) return "";
  auto labels = m->find("labels");
  if (labels == m->end() || !labels->is_object()) return "";
  auto job = labels->find(label_key);
  if (job == labels->end() || !job->is_string() || job->get<std::string>().empty()) return "";
  return m->value("namespace", "") + "/" + job->get<std::string>();
}

}  // namespace ddp::controller
