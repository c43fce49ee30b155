// pods.json (see pods_file.h).
#include "operator/local/pods_file.h"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

namespace ddp::controller::local {

void PodsFile::Update(const std::map<std::string, LocalPod>& pods) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [name, p] : pods) {
    list.push_back({{"name", name}, {"uid", p.uid}, {"role", p.role}, {"index", p.index},
                    {"round", p.round}, {"pid", p.pid}, {"alive", p.alive},
                    {"deleting", p.deleting}, {"metricsPort", p.metrics_port}, {"log", p.log_path}});
  }
  const std::string text = nlohmann::json{{"pods", list}}.dump(2) + "\n";
  if (text == last_) return;
  const std::string tmp = run_dir_ + "/.pods.json.tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << text;
    if (!f) return;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, run_dir_ + "/pods.json", ec);
  if (!ec) last_ = text;
}

}  // namespace ddp::controller::local
