// A replaced store's old membership (see rejoin.h).
#include "worker/group/rejoin.h"

#include <algorithm>

#include "worker/group/keys.h"

namespace ddp::worker::group {
namespace {

// A decimal in [0, limit), or -1.
int64_t Number(const std::string& s, int64_t limit) {
  if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string::npos) {
    return -1;
  }
  const int64_t v = std::stoll(s);
  return v < limit ? v : -1;
}

}  // namespace

std::string FormatMembers(int64_t generation, const std::vector<std::string>& holders, int nodes) {
  std::string out = std::to_string(generation) + ":" + std::to_string(nodes) + ";";
  bool first = true;
  for (size_t n = 0; n < holders.size(); ++n) {
    if (holders[n].empty()) continue;
    out += (first ? "" : ",") + std::to_string(n) + "=" + holders[n];
    first = false;
  }
  return out;
}

std::optional<Membership> ParseMembers(const std::string& text, int nodes) {
  const size_t semi = text.find(';');
  if (semi == std::string::npos) return std::nullopt;
  Membership m;
  const std::string head = text.substr(0, semi);
  const size_t colon = head.find(':');
  m.generation = Number(head.substr(0, colon), INT64_MAX);
  if (m.generation < 0) return std::nullopt;
  if (colon != std::string::npos) {
    const int64_t size = Number(head.substr(colon + 1), int64_t{nodes} + 1);
    if (size < 1) return std::nullopt;
    m.nodes = static_cast<int>(size);
  }
  std::string rest = text.substr(semi + 1);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string item = rest.substr(0, comma);
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
    const size_t eq = item.find('=');
    if (eq == std::string::npos) return std::nullopt;
    const int64_t n = Number(item.substr(0, eq), nodes);
    const std::string id = item.substr(eq + 1);
    // An identity is "<pod name>/<uid>": no separator of this format inside.
    if (n < 0 || id.find('/') == std::string::npos || id.find_first_of(",;=") != std::string::npos ||
        !m.holders.emplace(static_cast<int>(n), id).second) {
      return std::nullopt;
    }
    if (comma == std::string::npos) break;
    if (rest.empty()) return std::nullopt;  // a trailing comma
  }
  return m;
}

Membership NewestMembers(const std::vector<std::string>& copies, int nodes) {
  Membership best;
  for (const std::string& c : copies) {
    auto m = ParseMembers(c, nodes);
    if (m && m->generation > best.generation) best = std::move(*m);
  }
  return best;
}

double RejoinWindowSeconds(const AuthoritySettings& settings) {
  return std::max(3.0, settings.liveness_seconds / 4);
}

int SeedNodes(const Membership& old, const AuthoritySettings& settings, int nodes_now) {
  if (old.generation < 0 || old.nodes < 1 || old.nodes > settings.nodes) return nodes_now;
  // A holder past the size it names is a copy that contradicts itself: not trusted.
  if (!old.holders.empty() && old.holders.rbegin()->first >= old.nodes) return nodes_now;
  return old.nodes;
}

RejoinDecision DecideRejoin(const GroupView& v, const AuthoritySettings& s) {
  RejoinDecision d;
  for (const auto& [n, id] : v.previous) {
    if (n < 0 || n >= s.nodes) continue;
    if (std::find(v.fenced.begin(), v.fenced.end(), id) != v.fenced.end()) continue;
    auto it = v.pods.find(PodOfIdentity(id));
    if (it != v.pods.end() && it->second.identity == id) continue;  // back (rule 1 watches it)
    // Another pod under its name: its own pod object was deleted (a name is only reused once the
    // old object is gone), so it is not coming back: lost now, not at the window's end.
    const bool replaced = it != v.pods.end();
    if (!replaced && v.previous_seconds <= RejoinWindowSeconds(s)) {
      d.waiting.insert(n);
    } else {
      d.lost.push_back({n, id});
      if (replaced) d.replaced.insert(n);
    }
  }
  return d;
}

}  // namespace ddp::worker::group
