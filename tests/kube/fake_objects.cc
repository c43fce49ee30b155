#include "tests/kube/fake_objects.h"

#include <algorithm>
#include <cctype>

namespace ddp::fake {
namespace {

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

// Splits on commas that are not inside parentheses.
std::vector<std::string> SplitTopLevel(const std::string& text) {
  std::vector<std::string> parts;
  std::string cur;
  int depth = 0;
  for (char c : text) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  parts.push_back(cur);
  return parts;
}

bool ValidKey(const std::string& key) {
  if (key.empty()) return false;
  return std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
           c == '/';
  });
}

}  // namespace

bool ParseLabelSelector(const std::string& text, std::vector<LabelRequirement>* out,
                        std::string* error) {
  out->clear();
  if (Trim(text).empty()) return true;
  for (const std::string& raw : SplitTopLevel(text)) {
    std::string part = Trim(raw);
    LabelRequirement req;
    size_t pos;
    if (part.empty()) {
      *error = "empty requirement in selector \"" + text + "\"";
      return false;
    }
    if (part[0] == '!') {
      req.op = LabelRequirement::Op::kNotExists;
      req.key = Trim(part.substr(1));
    } else if ((pos = part.find("!=")) != std::string::npos) {
      req.op = LabelRequirement::Op::kNotEquals;
      req.key = Trim(part.substr(0, pos));
      req.values = {Trim(part.substr(pos + 2))};
    } else if ((pos = part.find("==")) != std::string::npos) {
      req.key = Trim(part.substr(0, pos));
      req.values = {Trim(part.substr(pos + 2))};
    } else if ((pos = part.find('=')) != std::string::npos) {
      req.key = Trim(part.substr(0, pos));
      req.values = {Trim(part.substr(pos + 1))};
    } else if ((pos = part.find('(')) != std::string::npos) {
      if (part.back() != ')') {
        *error = "unterminated set in selector requirement \"" + part + "\"";
        return false;
      }
      std::string head = Trim(part.substr(0, pos));
      size_t sp = head.find_last_of(" \t");
      if (sp == std::string::npos) {
        *error = "missing operator in selector requirement \"" + part + "\"";
        return false;
      }
      std::string op = head.substr(sp + 1);
      req.key = Trim(head.substr(0, sp));
      if (op == "in") {
        req.op = LabelRequirement::Op::kIn;
      } else if (op == "notin") {
        req.op = LabelRequirement::Op::kNotIn;
      } else {
        *error = "unknown selector operator \"" + op + "\"";
        return false;
      }
      std::string inner = part.substr(pos + 1, part.size() - pos - 2);
      size_t start = 0;
      for (;;) {
        size_t comma = inner.find(',', start);
        std::string v = Trim(inner.substr(start, comma == std::string::npos ? std::string::npos
                                                                              : comma - start));
        if (!v.empty()) req.values.push_back(v);
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    } else {
      req.op = LabelRequirement::Op::kExists;
      req.key = part;
    }
    if (!ValidKey(req.key)) {
      *error = "invalid label key \"" + req.key + "\" in selector \"" + text + "\"";
      return false;
    }
    out->push_back(std::move(req));
  }
  return true;
}

bool MatchesLabels(const std::vector<LabelRequirement>& selector, const nlohmann::json& labels) {
  for (const LabelRequirement& req : selector) {
    bool has = labels.is_object() && labels.contains(req.key) && labels[req.key].is_string();
    std::string value = has ? labels[req.key].get<std::string>() : "";
    bool in_values = has && std::find(req.values.begin(), req.values.end(), value) != req.values.end();
    bool ok = false;
    switch (req.op) {
      case LabelRequirement::Op::kEquals:
      case LabelRequirement::Op::kIn:
        ok = in_values;
        break;
      case LabelRequirement::Op::kNotEquals:
      case LabelRequirement::Op::kNotIn:
        ok = !in_values;  // Kubernetes: a missing key satisfies != and notin
        break;
      case LabelRequirement::Op::kExists:
        ok = has;
        break;
      case LabelRequirement::Op::kNotExists:
        ok = !has;
        break;
    }
    if (!ok) return false;
  }
  return true;
}

nlohmann::json MergePatch(const nlohmann::json& target, const nlohmann::json& patch) {
  if (!patch.is_object()) return patch;
  nlohmann::json result = target.is_object() ? target : nlohmann::json::object();
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    if (it.value().is_null()) {
      result.erase(it.key());
    } else {
      result[it.key()] = MergePatch(result.contains(it.key()) ? result[it.key()] : nlohmann::json(),
                                    it.value());
    }
  }
  return result;
}

bool SpecChanged(const nlohmann::json& before, const nlohmann::json& after) {
  nlohmann::json a = before, b = after;
  for (nlohmann::json* o : {&a, &b}) {
    if (o->is_object()) {
      o->erase("metadata");
      o->erase("status");
    }
  }
  return a != b;
}

}  // namespace ddp::fake
