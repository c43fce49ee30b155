// Pure object helpers of the test API server: label selectors, RFC 7386 merge patch, and the
// "did the spec change" rule behind metadata.generation.
#ifndef DDP_TESTS_KUBE_FAKE_OBJECTS_H_
#define DDP_TESTS_KUBE_FAKE_OBJECTS_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ddp::fake {

// One requirement of a label selector.
struct LabelRequirement {
  enum class Op { kEquals, kNotEquals, kIn, kNotIn, kExists, kNotExists };
  std::string key;
  Op op = Op::kEquals;
  std::vector<std::string> values;
};

// Parses the Kubernetes selector syntax: "a=b,c==d,e!=f,g in (x,y),h notin (z),i,!j".
// Returns false (with *error) on malformed input.
bool ParseLabelSelector(const std::string& text, std::vector<LabelRequirement>* out,
                        std::string* error);
// True when `labels` (a JSON object of strings, or null) satisfies every requirement.
bool MatchesLabels(const std::vector<LabelRequirement>& selector, const nlohmann::json& labels);

// RFC 7386: objects merge recursively, null deletes, anything else replaces.
nlohmann::json MergePatch(const nlohmann::json& target, const nlohmann::json& patch);

// True when anything outside metadata and status differs: what bumps metadata.generation.
bool SpecChanged(const nlohmann::json& before, const nlohmann::json& after);

}  // namespace ddp::fake

#endif  // DDP_TESTS_KUBE_FAKE_OBJECTS_H_
