#include "operator/kube/client_errors.h"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

namespace ddp::controller {

Status StatusFromHttp(int code, const std::string& body, const std::string& context) {
  if (code >= 200 && code < 300) return Status::OK();
  std::string reason, message;
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_object()) {
    reason = j.value("reason", "");
    message = j.value("message", "");
  }
  if (message.empty()) message = body.substr(0, 200);
  if (message.empty()) message = "HTTP " + std::to_string(code);
  std::string m = context + ": " + message;
  switch (code) {
    case 400:
    case 422:
      return Status::InvalidArgument(m);
    case 401:
      return Status::Unauthenticated(m + " (HINT: the token or client certificate was rejected)");
    case 403:
      // The server's message names the user, verb, resource and namespace that RBAC denied.
      return Status::Forbidden(m + " (HINT: grant this permission to the operator's ServiceAccount)");
    case 404:
      return Status::NotFound(m);
    case 409:
      return reason == "AlreadyExists" ? Status::AlreadyExists(m) : Status::Conflict(m);
    case 410:
      return Status::Gone(m);
    case 429:
      return Status::Unavailable(m);
    default:
      break;
  }
  if (code >= 500) return Status::Unavailable(m + " (HTTP " + std::to_string(code) + ")");
  return Status::Internal(m + " (HTTP " + std::to_string(code) + ")");
}

bool ShouldRetry(int code, const std::string& verb) {
  if (code == 429) return true;
  bool idempotent = verb == "get" || verb == "list" || verb == "watch";
  return idempotent && (code == 0 || code >= 500);
}

int ParseRetryAfter(const std::string& header) {
  if (header.empty() || !std::all_of(header.begin(), header.end(),
                                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    return -1;
  }
  return std::min(60, std::atoi(header.c_str()));
}

}  // namespace ddp::controller
