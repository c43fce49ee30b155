#include "operator/kube/resource.h"

namespace ddp::controller {

std::string Resource::Path(const std::string& ns, const std::string& name) const {
  std::string path = group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
  if (namespaced && !ns.empty()) path += "/namespaces/" + ns;
  path += "/" + plural;
  if (!name.empty()) path += "/" + name;
  return path;
}

std::string Resource::ApiVersion() const {
  return group.empty() ? version : group + "/" + version;
}

std::string Resource::Display() const {
  return group.empty() ? plural : plural + "." + group;
}

}  // namespace ddp::controller
