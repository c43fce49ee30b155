#include "operator/kube/cache.h"

#include "operator/plan/names.h"

namespace ddp::controller {

std::string ObjectKey(const nlohmann::json& obj) {
  auto m = obj.find("metadata");
  if (m == obj.end() || !m->is_object()) return "";
  std::string name = m->value("name", "");
  std::string ns = m->value("namespace", "");
  return ns.empty() ? name : ns + "/" + name;
}

std::string JobKeyFromLabel(const nlohmann::json& obj) {
  auto m = obj.find("metadata");
  if (m == obj.end() || !m->is_object()) return "";
  auto labels = m->find("labels");
  if (labels == m->end() || !labels->is_object()) return "";
  auto job = labels->find(plan::kJobNameLabel);
  if (job == labels->end() || !job->is_string() || job->get<std::string>().empty()) return "";
  return m->value("namespace", "") + "/" + job->get<std::string>();
}

}  // namespace ddp::controller
