// The soft open-file limit raised to the hard one at start (common/fd_limit.h). Each test runs
// in a process of its own (gtest_discover_tests), so lowering this process's limit is safe.
#include "common/fd_limit.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <vector>

#include <gtest/gtest.h>

namespace ddp {
namespace {

TEST(SoftFileLimitToAsk, IsTheHardLimitCappedByTheKernelsCeilingWhenUnlimited) {
  EXPECT_EQ(SoftFileLimitToAsk(1024, 524288, 1 << 20), 524288u);
  EXPECT_EQ(SoftFileLimitToAsk(1024, kNoFileLimit, 1 << 20), uint64_t{1} << 20);
  EXPECT_EQ(SoftFileLimitToAsk(4096, 4096, 1 << 20), 4096u);
  // Never lowers: a soft limit already above the ceiling stays.
  EXPECT_EQ(SoftFileLimitToAsk(kNoFileLimit, kNoFileLimit, 1 << 20), kNoFileLimit);
}

TEST(DescribeFileLimit, SaysTheChangeAndTheHardLimit) {
  EXPECT_EQ(DescribeFileLimit({1024, 524288, 524288}),
            "open files: soft limit 1024 -> 524288 (the hard limit)");
  EXPECT_EQ(DescribeFileLimit({524288, 524288, 524288}),
            "open files: soft limit 524288 (the hard limit)");
  EXPECT_EQ(DescribeFileLimit({1024, 1 << 20, kNoFileLimit}),
            "open files: soft limit 1024 -> 1048576 (hard limit unlimited)");
}

// A process started with a low soft limit (a container under containerd 2.x starts at 1024;
// here 64) can open past it once raised: the descriptors it opens number more than the old
// soft limit, up to what the hard limit allows.
TEST(RaiseFileLimit, LetsAProcessStartedAtALowSoftLimitOpenPastIt) {
  rlimit lim{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &lim), 0);
  const rlim_t hard = lim.rlim_max == RLIM_INFINITY ? 4096 : lim.rlim_max;
  if (hard < 256) GTEST_SKIP() << "hard limit " << hard << " leaves no room above 64";
  lim.rlim_cur = 64;
  lim.rlim_max = hard;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &lim), 0);
  auto opened = [] {
    std::vector<int> fds;
    for (int fd; fds.size() < 200 && (fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) {
      fds.push_back(fd);
    }
    for (int fd : fds) ::close(fd);
    return fds.size();
  };
  ASSERT_LT(opened(), 64u) << "the lowered limit must bind before the raise";

  const StatusOr<FileLimit> l = RaiseFileLimit();
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_EQ(l->before, 64u);
  EXPECT_EQ(l->hard, static_cast<uint64_t>(hard));
  EXPECT_EQ(l->soft, static_cast<uint64_t>(hard));
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &lim), 0);
  EXPECT_EQ(lim.rlim_cur, hard);
  EXPECT_EQ(opened(), 200u);

  // Raising again changes nothing and says so.
  const StatusOr<FileLimit> again = RaiseFileLimit();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->before, again->soft);
}

}  // namespace
}  // namespace ddp
