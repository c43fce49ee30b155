// The group store's wire protocol (version 1), shared by its server (server.h) and its client
// (worker/comm/store_client.h). The project owns both ends, so every LibTorch it builds against
// (1.13 on CPU, 2.x on GPUs) runs the same store code, with every call bounded; c10d only sees a
// c10d::Store. Pure: no sockets here, so the decoder is fuzzed alone (fuzz/store_frame_fuzz.cc).
//
// A frame is a little-endian u32 length L, then L bytes. A request: its Op (one byte), then its
// fields, each a u32-length-prefixed byte string, a u32 or an i64, little-endian. A reply, to
// whatever request: its Code (one byte), an i64 and a byte string (either may be unused).
//
//   request                     fields                      reply (kOk unless said)
//   kHello                      magic "ddpstore", version   version, server id
//   kSet                        key, value                  -
//   kGet                        key, wait ms                value; kTimeout after `wait ms`
//                                                           (0: kNotFound at once when absent)
//   kWait                       wait ms, keys...            -; kTimeout after `wait ms`
//   kAdd                        key, delta                  the new value (i64)
//   kCheck                      keys...                     u32 1 when every key exists, else 0
//   kCompareSet                 key, expected, desired      the value after (c10d's semantics)
//   kDelete                     key                         u32 1 when it existed, else 0
//   kNumKeys                    -                           i64
//   kWatch                      wait ms, conditions...      values of the conditions' keys, once
//                                                           one holds; kTimeout (with the values)
//                                                           after `wait ms`
// A condition is a key, a kind (kChanged: its value differs from the operand, absence reading as
// the empty value; kAtLeast: it holds a counter >= the operand's integer) and an operand. A watch
// replaces polling: the server parks it and looks at it again only when one of its keys is
// written, so a group of thousands of members costs the store nothing while nothing changes.
// Any request may get kError with a message (a malformed frame, a full store, a counter that
// holds no number): after a malformed frame the server closes the connection.
//
// The first frame on a connection must be kHello: a peer that speaks another protocol (c10d's
// TCPStore, a port scanner) is refused at once instead of being read as a query.
#ifndef DDP_WORKER_STORE_WIRE_H_
#define DDP_WORKER_STORE_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace ddp::store {

inline constexpr char kMagic[] = "ddpstore";  // 8 bytes on the wire, no terminator
inline constexpr uint32_t kVersion = 1;

// Bounds a server and a client both enforce (anything may connect to the port).
inline constexpr size_t kMaxKeyBytes = 4096;
inline constexpr size_t kMaxValueBytes = 64u << 20;  // the store holds names, counters, ids
inline constexpr size_t kMaxKeysPerRequest = 65536;  // also conditions per watch
// A watch's reply carries the values of its keys: their sum is bounded (65,536 conditions on one
// 64 MiB value must not make the server copy it 65,536 times).
inline constexpr size_t kMaxWatchValueBytes = kMaxValueBytes - 8 * kMaxKeysPerRequest;
// A compareSet carries two values; everything else is small.
inline constexpr size_t kMaxFrameBytes = 2 * kMaxValueBytes + 64 * 1024;
inline constexpr uint32_t kMaxWaitMs = 24u * 3600 * 1000;

enum class Op : uint8_t {
  kHello = 1,
  kSet = 2,
  kGet = 3,
  kWait = 4,
  kAdd = 5,
  kCheck = 6,
  kCompareSet = 7,
  kDelete = 8,
  kNumKeys = 9,
  kWatch = 10,
};
inline constexpr int kOpCount = 11;  // Op values are 1 .. kOpCount - 1
const char* OpName(Op op);

enum class Code : uint8_t { kOk = 0, kNotFound = 1, kTimeout = 2, kError = 3 };

using Bytes = std::vector<uint8_t>;

struct Condition {
  enum Kind : uint8_t { kChanged = 0, kAtLeast = 1 };
  std::string key;
  Kind kind = kChanged;
  Bytes operand;  // kChanged: the value known; kAtLeast: a decimal integer

  bool operator==(const Condition& o) const {
    return key == o.key && kind == o.kind && operand == o.operand;
  }
};

// Whether `c` holds for `value` (nullopt: the key is absent). Pure; shared by the server, the
// in-process store and the clients' polling fallback.
bool Holds(const Condition& c, const Bytes* value);

// A watch's reply value: for each condition in order, whether its key exists and its value.
std::string EncodeValues(const std::vector<const Bytes*>& values);
Status DecodeValues(const Bytes& encoded, size_t count, std::vector<std::optional<Bytes>>* out);

struct Request {
  Op op = Op::kHello;
  std::vector<std::string> keys;  // one for kSet/kGet/kAdd/kCompareSet/kDelete
  Bytes value;                    // kSet's value, kCompareSet's desired; kHello's magic
  Bytes expected;                 // kCompareSet
  int64_t number = 0;             // kAdd's delta; kHello's version
  uint32_t wait_ms = 0;           // kGet, kWait, kWatch
  std::vector<Condition> conditions;  // kWatch

  bool operator==(const Request& o) const;
};

struct Reply {
  Code code = Code::kOk;
  Bytes value;          // kGet, kCompareSet; kHello's server id; kError's message
  int64_t number = 0;   // kAdd, kNumKeys, kCheck/kDelete (0/1); kHello's version
};

// Whole frames, length prefix included.
std::string EncodeRequest(const Request& r);
std::string EncodeReply(const Reply& r);

// `body` is a frame without its length prefix. InvalidArgument naming what is wrong: an
// unknown op, a field cut short or too long, bytes left over.
Status DecodeRequest(const uint8_t* body, size_t n, Request* out);
// A reply's body. InvalidArgument as above.
Status DecodeReply(const uint8_t* body, size_t n, Reply* out);

// Reads a frame's length prefix from 4 bytes. InvalidArgument past kMaxFrameBytes or for 0.
Status FrameLength(const uint8_t* prefix4, uint32_t* length);

}  // namespace ddp::store

#endif  // DDP_WORKER_STORE_WIRE_H_
