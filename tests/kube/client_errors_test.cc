#include "operator/kube/client_errors.h"

#include <gtest/gtest.h>

namespace ddp::controller {
namespace {

std::string Body(int code, const std::string& reason, const std::string& message) {
  return R"({"kind":"Status","apiVersion":"v1","status":"Failure","code":)" +
         std::to_string(code) + R"(,"reason":")" + reason + R"(","message":")" + message + "\"}";
}

TEST(ClientErrors, HttpCodesMapToStatus) {
  struct Case {
    int code;
    std::string reason;
    StatusCode want;
  };
  const std::vector<Case> cases = {
      {200, "", StatusCode::kOk},
      {201, "", StatusCode::kOk},
      {400, "BadRequest", StatusCode::kInvalidArgument},
      {401, "Unauthorized", StatusCode::kUnauthenticated},
      {403, "Forbidden", StatusCode::kForbidden},
      {404, "NotFound", StatusCode::kNotFound},
      {409, "AlreadyExists", StatusCode::kAlreadyExists},
      {409, "Conflict", StatusCode::kConflict},
      {409, "", StatusCode::kConflict},
      {410, "Expired", StatusCode::kGone},
      {422, "Invalid", StatusCode::kInvalidArgument},
      {429, "TooManyRequests", StatusCode::kUnavailable},
      {500, "InternalError", StatusCode::kUnavailable},
      {503, "ServiceUnavailable", StatusCode::kUnavailable},
      {418, "", StatusCode::kInternal},
  };
  for (const Case& c : cases) {
    Status s = StatusFromHttp(c.code, Body(c.code, c.reason, "m"), "get pods ml/x");
    EXPECT_EQ(s.code(), c.want) << c.code << " " << c.reason;
    if (!s.ok()) {
      EXPECT_EQ(s.message().rfind("get pods ml/x: m", 0), 0u) << s.message();
    }
  }
}

TEST(ClientErrors, ForbiddenKeepsTheServersPermissionMessage) {
  std::string msg = "pods is forbidden: User \\\"system:serviceaccount:a:b\\\" cannot list "
                    "resource \\\"pods\\\" in API group \\\"\\\" in the namespace \\\"ml\\\"";
  Status s = StatusFromHttp(403, Body(403, "Forbidden", msg), "list pods ml");
  EXPECT_EQ(s.code(), StatusCode::kForbidden);
  EXPECT_NE(s.message().find("cannot list resource \"pods\""), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("in the namespace \"ml\""), std::string::npos) << s.message();
}

TEST(ClientErrors, NonJsonBodyIsQuoted) {
  Status s = StatusFromHttp(502, "<html>bad gateway</html>", "get pods ml/x");
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("bad gateway"), std::string::npos);
}

TEST(ClientErrors, RetryRules) {
  EXPECT_TRUE(ShouldRetry(429, "create"));  // never processed: safe for any verb
  EXPECT_TRUE(ShouldRetry(503, "get"));
  EXPECT_TRUE(ShouldRetry(0, "list"));
  EXPECT_FALSE(ShouldRetry(500, "create"));  // may have been applied
  EXPECT_FALSE(ShouldRetry(500, "patch"));
  EXPECT_FALSE(ShouldRetry(409, "get"));
  EXPECT_FALSE(ShouldRetry(404, "get"));
}

TEST(ClientErrors, RetryAfterHeader) {
  EXPECT_EQ(ParseRetryAfter("3"), 3);
  EXPECT_EQ(ParseRetryAfter(""), -1);
  EXPECT_EQ(ParseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT"), -1);
  EXPECT_EQ(ParseRetryAfter("3600"), 60);
}

}  // namespace
}  // namespace ddp::controller
