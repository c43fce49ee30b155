// The request head parser: a table of heads a client may send, each with the expected result.
#include "common/http_request.h"

#include <gtest/gtest.h>

namespace ddp {
namespace {

TEST(RequestHead, FindsTheEndOfTheHead) {
  EXPECT_EQ(RequestHeadLength("GET / HTTP/1.1\r\n\r\nbody"), 18u);
  EXPECT_EQ(RequestHeadLength("GET / HTTP/1.1\n\n"), 16u);
  EXPECT_EQ(RequestHeadLength("GET / HTTP/1.1\r\nHost: x\r\n"), 0u);
  EXPECT_EQ(RequestHeadLength(""), 0u);
  EXPECT_EQ(RequestHeadLength("\n"), 0u);
  EXPECT_EQ(RequestHeadLength("\n\r"), 0u);
}

TEST(RequestHead, ReadsTheRequestLine) {
  RequestHead h;
  ASSERT_TRUE(ParseRequestHead("GET /metrics?x=1 HTTP/1.1\r\nHost: a:1\r\nAccept: */*\r\n\r\n", &h).ok());
  EXPECT_EQ(h.method, "GET");
  EXPECT_EQ(h.target, "/metrics?x=1");
  EXPECT_EQ(h.path, "/metrics");
  ASSERT_TRUE(ParseRequestHead("HEAD /healthz HTTP/1.0\n\n", &h).ok());
  EXPECT_EQ(h.method, "HEAD");
}

TEST(RequestHead, RejectsWhatIsNotARequestHead) {
  for (const char* bad : {"", "\r\n\r\n", "GET\r\n\r\n", "GET /\r\n\r\n", "GET / HTTP/1.1x\r\n\r\n",
                          "GET / HTTP/2\r\n\r\n", "GET x HTTP/1.1\r\n\r\n", " / HTTP/1.1\r\n\r\n",
                          "G(T / HTTP/1.1\r\n\r\n", "GET /a\x01 HTTP/1.1\r\n\r\n",
                          "GET / HTTP/1.1\r\nno-colon\r\n\r\n", "GET / HTTP/1.1\r\n: v\r\n\r\n",
                          "GET / HTTP/1.1\r\nBad Name: v\r\n\r\n",
                          "GET / HTTP/1.1\r\nA: \x02\r\n\r\n",
                          "AVERYLONGMETHODNAMEPASTSIXTEEN / HTTP/1.1\r\n\r\n"}) {
    RequestHead h;
    EXPECT_FALSE(ParseRequestHead(bad, &h).ok()) << bad;
  }
}

}  // namespace
}  // namespace ddp
