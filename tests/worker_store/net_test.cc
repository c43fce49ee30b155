// Sockets with deadlines: a resolver that hangs (a lost node's DNS replica) costs the caller its
// bound and no more; a refused port is an error naming it.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <thread>

#include "worker/store/net.h"

namespace ddp::store {
namespace {

using std::chrono::milliseconds;

TEST(StoreNetTest, AResolverThatHangsCostsTheCallerItsBoundOnly) {
  // The stand-in resolver hangs until the test has its answer (at most 10 s), long after the
  // caller's 300 ms.
  auto release = std::make_shared<std::promise<void>>();
  std::shared_future<void> released = release->get_future().share();
  Resolver slow = [released](const char*, const char* service, const addrinfo* hints,
                             addrinfo** result) {
    released.wait_for(std::chrono::seconds(10));
    return SystemResolver("127.0.0.1", service, hints, result);
  };
  const auto start = Clock::now();
  auto r = ResolveWithin("store.example.invalid", 29500, start + milliseconds(300), slow);
  const auto took = Clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(r.status().message().find("store.example.invalid:29500"), std::string::npos);
  EXPECT_GE(took, milliseconds(300));
  EXPECT_LT(took, milliseconds(1500));
  release->set_value();  // the abandoned lookup ends now, its answer dropped
}

TEST(StoreNetTest, ANameThatDoesNotResolveIsUnavailableWithTheResolversWords) {
  Resolver none = [](const char*, const char*, const addrinfo*, addrinfo**) { return EAI_NONAME; };
  auto r = ResolveWithin("nowhere", 1, Clock::now() + milliseconds(1000), none);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find(::gai_strerror(EAI_NONAME)), std::string::npos);
}

TEST(StoreNetTest, ANumericAddressNeedsNoResolver) {
  Resolver never = [](const char*, const char*, const addrinfo*, addrinfo**) -> int {
    ADD_FAILURE() << "the resolver was asked about a numeric address";
    return EAI_FAIL;
  };
  for (const char* host : {"127.0.0.1", "::1"}) {
    auto r = ResolveWithin(host, 80, Clock::now() + milliseconds(1000), never);
    ASSERT_TRUE(r.ok()) << host << ": " << r.status().ToString();
    EXPECT_FALSE(r->empty());
  }
}

TEST(StoreNetTest, ARefusedPortIsUnavailableNamingIt) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  const int port = ntohs(a.sin_port);
  ::close(fd);  // bound once, listened never: refused
  auto c = ConnectWithin("127.0.0.1", port, Clock::now() + milliseconds(2000));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(c.status().message().find("127.0.0.1:" + std::to_string(port)), std::string::npos);
}

}  // namespace
}  // namespace ddp::store
