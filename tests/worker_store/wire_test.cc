// The store's frames: every request and reply survives a round trip, and every malformed body
// is refused with a message naming what is wrong (the server closes such a connection).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "worker/store/wire.h"

namespace ddp::store {
namespace {

Bytes B(const std::string& s) { return {s.begin(), s.end()}; }

// The body of a frame (its length prefix checked and stripped).
std::vector<uint8_t> Body(const std::string& frame) {
  EXPECT_GE(frame.size(), 4u);
  uint32_t len = 0;
  EXPECT_TRUE(FrameLength(reinterpret_cast<const uint8_t*>(frame.data()), &len).ok());
  EXPECT_EQ(len + 4, frame.size());
  return {frame.begin() + 4, frame.end()};
}

Request Req(Op op, std::vector<std::string> keys, Bytes value = {}, Bytes expected = {},
            int64_t number = 0, uint32_t wait_ms = 0) {
  Request r;
  r.op = op;
  r.keys = std::move(keys);
  r.value = std::move(value);
  r.expected = std::move(expected);
  r.number = number;
  r.wait_ms = wait_ms;
  return r;
}

TEST(StoreWireTest, EveryRequestSurvivesARoundTrip) {
  Request hello = Req(Op::kHello, {}, Bytes(kMagic, kMagic + 8), {}, kVersion);
  const std::vector<Request> rows = {
      hello,
      Req(Op::kSet, {"gen0/arrived/1"}, B("17 pod-a/u1/0/0")),
      Req(Op::kSet, {"empty"}, {}),
      Req(Op::kGet, {"k"}, {}, {}, 0, 250),
      Req(Op::kWait, {"a", "b", "c"}, {}, {}, 0, 10000),
      Req(Op::kWait, {}, {}, {}, 0, 1),
      Req(Op::kAdd, {"gen"}, {}, {}, -5),
      Req(Op::kAdd, {"big"}, {}, {}, INT64_MIN),
      Req(Op::kCheck, {"x", ""}),
      Req(Op::kCompareSet, {"pod/w/id"}, B("desired"), B("expected")),
      Req(Op::kCompareSet, {"pod/w/id"}, B("desired"), {}),
      Req(Op::kDelete, {"node/3"}),
      Req(Op::kNumKeys, {}),
  };
  for (const Request& r : rows) {
    const auto body = Body(EncodeRequest(r));
    Request back;
    ASSERT_TRUE(DecodeRequest(body.data(), body.size(), &back).ok()) << OpName(r.op);
    EXPECT_EQ(back, r) << OpName(r.op);
  }
}

TEST(StoreWireTest, EveryReplySurvivesARoundTrip) {
  for (Code code : {Code::kOk, Code::kNotFound, Code::kTimeout, Code::kError}) {
    Reply r;
    r.code = code;
    r.number = -123456789012345;
    r.value = B(std::string("value with \0 inside", 19));
    const auto body = Body(EncodeReply(r));
    Reply back;
    ASSERT_TRUE(DecodeReply(body.data(), body.size(), &back).ok());
    EXPECT_EQ(back.code, r.code);
    EXPECT_EQ(back.number, r.number);
    EXPECT_EQ(back.value, r.value);
  }
}

// Each malformed body, and the words its refusal must contain.
TEST(StoreWireTest, MalformedRequestsAreRefusedWithWhatIsWrong) {
  auto set = Body(EncodeRequest(Req(Op::kSet, {"key"}, B("value"))));
  auto cut = set;
  cut.pop_back();
  auto extra = set;
  extra.push_back(0);
  auto hello = Body(EncodeRequest(Req(Op::kHello, {}, {}, {}, 1)));
  auto not_magic = hello;
  not_magic[3] = 'X';
  auto huge_key = Body(EncodeRequest(Req(Op::kGet, {std::string(kMaxKeyBytes + 1, 'k')})));
  auto long_wait = Body(EncodeRequest(Req(Op::kWait, {"k"}, {}, {}, 0, kMaxWaitMs + 1)));
  // A key count past the bound, with nothing after it: refused before reading any key.
  std::vector<uint8_t> many = {static_cast<uint8_t>(Op::kCheck), 0xff, 0xff, 0xff, 0x7f};
  const std::vector<std::pair<std::vector<uint8_t>, std::string>> rows = {
      {{}, "empty"},
      {{0}, "unknown request 0"},
      {{static_cast<uint8_t>(kOpCount)}, "unknown request"},
      {{200, 1, 2}, "unknown request 200"},
      {cut, "cut short"},
      {extra, "left over"},
      {not_magic, "not a ddp store greeting"},
      {huge_key, "key of 4097 bytes"},
      {long_wait, "a wait of"},
      {many, "keys in one request"},
  };
  for (const auto& [body, words] : rows) {
    Request r;
    const Status s = DecodeRequest(body.data(), body.size(), &r);
    ASSERT_FALSE(s.ok()) << words;
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find(words), std::string::npos) << s.message() << " / want: " << words;
  }
}

TEST(StoreWireTest, AFrameLengthOfZeroOrPastTheBoundIsRefusedBeforeAnythingIsRead) {
  const uint8_t zero[4] = {0, 0, 0, 0};
  const uint8_t huge[4] = {0xff, 0xff, 0xff, 0xff};
  uint32_t len = 0;
  EXPECT_FALSE(FrameLength(zero, &len).ok());
  const Status s = FrameLength(huge, &len);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("4294967295 bytes"), std::string::npos) << s.message();
  // The bound itself is a frame a compareSet of two 64 MiB values fits in.
  const uint32_t max = static_cast<uint32_t>(kMaxFrameBytes);
  const uint8_t at[4] = {static_cast<uint8_t>(max), static_cast<uint8_t>(max >> 8),
                         static_cast<uint8_t>(max >> 16), static_cast<uint8_t>(max >> 24)};
  ASSERT_TRUE(FrameLength(at, &len).ok());
  EXPECT_EQ(len, kMaxFrameBytes);
  EXPECT_GE(kMaxFrameBytes, 1 + 4 + kMaxKeyBytes + 2 * (4 + kMaxValueBytes));
}

TEST(StoreWireTest, AMalformedReplyIsRefused) {
  Reply r;
  r.value = B("abc");
  auto body = Body(EncodeReply(r));
  auto cut = body;
  cut.pop_back();
  auto code = body;
  code[0] = 9;
  for (const auto& bad : {cut, code, std::vector<uint8_t>{}}) {
    Reply out;
    EXPECT_FALSE(DecodeReply(bad.data(), bad.size(), &out).ok());
  }
}

}  // namespace
}  // namespace ddp::store
