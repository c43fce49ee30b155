// Ports for servers started later, picked below the ephemeral range (common/listen_port.h).
#include "common/listen_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include <gtest/gtest.h>

namespace ddp {
namespace {

using Range = std::pair<int, int>;

TEST(ListenPortRange, IsUpTo16384PortsBelowTheEphemeralAndNodePortRangesAndNeverBelow1024) {
  EXPECT_EQ(ListenPortRange("32768\t60999\n"), (Range{13616, 29999}));  // Linux's default
  EXPECT_EQ(ListenPortRange("49152 65535"), (Range{13616, 29999}));     // IANA's
  EXPECT_EQ(ListenPortRange("20000 65535"), (Range{3616, 19999}));
  EXPECT_EQ(ListenPortRange("10000 65000"), (Range{1024, 9999}));
  EXPECT_EQ(ListenPortRange("1280 65000"), (Range{1024, 1279}));        // exactly 256
}

TEST(ListenPortRange, LeavesThePickToTheKernelWhenTooFewRemainOrTheTextIsBad) {
  EXPECT_EQ(ListenPortRange("1279 65000"), (Range{0, 0}));  // 255 ports
  EXPECT_EQ(ListenPortRange("1024 65535"), (Range{0, 0}));
  EXPECT_EQ(ListenPortRange(""), (Range{0, 0}));
  EXPECT_EQ(ListenPortRange("32768"), (Range{0, 0}));
  EXPECT_EQ(ListenPortRange("60999 32768"), (Range{0, 0}));  // reversed
  EXPECT_EQ(ListenPortRange("32768 70000"), (Range{0, 0}));
  EXPECT_EQ(ListenPortRange("-5 100"), (Range{0, 0}));
}

// Binds and listens on 0.0.0.0:port, as the worker's /metrics server does; -1 on failure.
int Listen(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || ::listen(fd, 4) != 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  return fd;
}

// Every pick lies outside the running kernel's ephemeral range (where outgoing connections take
// their source ports) and can be listened on; one held by a listener is never picked again.
TEST(PickListenPort, PicksOutsideTheEphemeralRangeAndNeverAPortInUse) {
  std::ifstream f("/proc/sys/net/ipv4/ip_local_port_range");
  int lo = 0, hi = 0;
  ASSERT_TRUE(f >> lo >> hi) << "cannot read the ephemeral range";
  std::ostringstream text;
  text << lo << " " << hi;
  const Range range = ListenPortRange(text.str());
  std::vector<int> held;
  std::set<int> ports;
  for (int i = 0; i < 200; ++i) {
    auto port = PickListenPort();
    ASSERT_TRUE(port.ok()) << port.status().ToString();
    if (range.first > 0) {
      EXPECT_GE(*port, range.first);
      EXPECT_LE(*port, range.second);
      EXPECT_LT(*port, lo) << "inside the ephemeral range";
    }
    EXPECT_TRUE(ports.insert(*port).second) << "port " << *port << " is held by this test";
    const int fd = Listen(*port);
    EXPECT_GE(fd, 0) << "cannot listen on the port picked: " << *port;
    if (fd >= 0) held.push_back(fd);
  }
  for (int fd : held) ::close(fd);
}

}  // namespace
}  // namespace ddp
