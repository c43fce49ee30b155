#include "common/status.h"

#include <gtest/gtest.h>

namespace ddp {
namespace {

TEST(StatusTest, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(StatusTest, WithContextKeepsCodeAndPrefixesMessage) {
  Status s = Status::NotFound("pods ml/x-worker-0").WithContext("get pod");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ToString(), "NotFound: get pod: pods ml/x-worker-0");
  EXPECT_TRUE(Status::OK().WithContext("ignored").ok());
}

TEST(StatusOrTest, HoldsValueOrError) {
  StatusOr<int> v = 7;
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 7);
  StatusOr<int> e = Status::Unavailable("503");
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kUnavailable);
  // An OK status is not a value: it becomes an Internal error instead of a crash later.
  StatusOr<int> bad = Status::OK();
  EXPECT_EQ(bad.status().code(), StatusCode::kInternal);
}

Status FailsThenNeverReached(bool* reached) {
  DDP_RETURN_IF_ERROR(Status::Conflict("stale"));
  *reached = true;
  return Status::OK();
}

TEST(StatusTest, ReturnIfErrorReturnsEarly) {
  bool reached = false;
  EXPECT_EQ(FailsThenNeverReached(&reached).code(), StatusCode::kConflict);
  EXPECT_FALSE(reached);
}

}  // namespace
}  // namespace ddp
