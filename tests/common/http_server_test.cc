#include "common/http_server.h"

#include <gtest/gtest.h>

#include <atomic>

namespace ddp {
namespace {

TEST(HttpServerTest, ServesRegisteredPathsAnd404Otherwise) {
  HttpServer srv;
  std::atomic<int> calls{0};
  srv.Handle("/healthz", [&] { calls++; return HttpResponse{200, "text/plain", "ok\n"}; });
  srv.Handle("/readyz", [] { return HttpResponse{503, "text/plain", "not leader\n"}; });
  ASSERT_TRUE(srv.Start("127.0.0.1:0").ok());
  ASSERT_GT(srv.port(), 0);
  auto ok = HttpGet("127.0.0.1", srv.port(), "/healthz?verbose=1");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(*ok, "ok\n");
  EXPECT_EQ(calls.load(), 1);
  auto missing = HttpGet("127.0.0.1", srv.port(), "/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("HTTP 404"), std::string::npos);
  auto unready = HttpGet("127.0.0.1", srv.port(), "/readyz");
  EXPECT_NE(unready.status().message().find("HTTP 503"), std::string::npos);
  srv.Stop();
  srv.Stop();  // idempotent
}

TEST(HttpServerTest, LargeBodiesArriveWhole) {
  HttpServer srv;
  const std::string big(300000, 'x');
  srv.Handle("/metrics", [&] { return HttpResponse{200, kPrometheusContentType, big}; });
  ASSERT_TRUE(srv.Start(":0").ok());
  auto body = HttpGet("127.0.0.1", srv.port(), "/metrics");
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  EXPECT_EQ(body->size(), big.size());
}

TEST(HttpServerTest, BadAddressesAreClearErrors) {
  HttpServer srv;
  Status s = srv.Start("127.0.0.1:notaport");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("127.0.0.1:notaport"), std::string::npos);
  EXPECT_EQ(srv.Start("999999").code(), StatusCode::kInvalidArgument);
  // A port already taken is Unavailable, not a crash.
  HttpServer first;
  ASSERT_TRUE(first.Start("127.0.0.1:0").ok());
  HttpServer second;
  EXPECT_EQ(second.Start("127.0.0.1:" + std::to_string(first.port())).code(),
            StatusCode::kUnavailable);
}

TEST(HttpGetTest, RefusedConnectionIsUnavailable) {
  HttpServer srv;
  ASSERT_TRUE(srv.Start("127.0.0.1:0").ok());
  int port = srv.port();
  srv.Stop();
  auto r = HttpGet("127.0.0.1", port, "/metrics", 500);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace ddp
