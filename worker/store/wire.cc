// The store's frames (see wire.h).
#include "worker/store/wire.h"

#include <cstdlib>
#include <cstring>

namespace ddp::store {
namespace {

void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void PutI64(std::string* out, int64_t v) {
  const auto u = static_cast<uint64_t>(v);
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((u >> (8 * i)) & 0xff));
}

void PutBytes(std::string* out, const void* data, size_t n) {
  PutU32(out, static_cast<uint32_t>(n));
  out->append(static_cast<const char*>(data), n);
}

// Reads fields off a body; the first failure sticks and names the field.
class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), left_(n) {}

  uint32_t U32(const char* what) {
    if (!Need(4, what)) return 0;
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p_[i]) << (8 * i);
    Skip(4);
    return v;
  }

  uint8_t Byte() {
    if (!Need(1, "byte")) return 0;
    const uint8_t v = p_[0];
    Skip(1);
    return v;
  }

  int64_t I64(const char* what) {
    if (!Need(8, what)) return 0;
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p_[i]) << (8 * i);
    Skip(8);
    return static_cast<int64_t>(v);
  }

  // A length-prefixed field of at most `max` bytes.
  Bytes Field(const char* what, size_t max) {
    const uint32_t n = U32(what);
    if (!error_.empty()) return {};
    if (n > max) {
      Fail(std::string(what) + " of " + std::to_string(n) + " bytes (at most " +
           std::to_string(max) + ")");
      return {};
    }
    if (!Need(n, what)) return {};
    Bytes v(p_, p_ + n);
    Skip(n);
    return v;
  }

  std::string Key() {
    const Bytes b = Field("key", kMaxKeyBytes);
    return std::string(b.begin(), b.end());
  }

  Status Done() {
    if (error_.empty() && left_ != 0) Fail(std::to_string(left_) + " bytes left over");
    return error_.empty() ? Status::OK() : Status::InvalidArgument(error_);
  }

  bool ok() const { return error_.empty(); }
  size_t left() const { return left_; }

 private:
  bool Need(size_t n, const char* what) {
    if (!error_.empty()) return false;
    if (left_ < n) {
      Fail(std::string(what) + " cut short");
      return false;
    }
    return true;
  }
  void Skip(size_t n) {
    p_ += n;
    left_ -= n;
  }
  void Fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
  }

  const uint8_t* p_;
  size_t left_;
  std::string error_;
};

bool HasOneKey(Op op) {
  return op == Op::kSet || op == Op::kGet || op == Op::kAdd || op == Op::kCompareSet ||
         op == Op::kDelete;
}

std::string Frame(std::string body) {
  std::string out;
  out.reserve(body.size() + 4);
  PutU32(&out, static_cast<uint32_t>(body.size()));
  out += body;
  return out;
}

}  // namespace

const char* OpName(Op op) {
  switch (op) {
    case Op::kHello: return "hello";
    case Op::kSet: return "set";
    case Op::kGet: return "get";
    case Op::kWait: return "wait";
    case Op::kAdd: return "add";
    case Op::kCheck: return "check";
    case Op::kCompareSet: return "compareSet";
    case Op::kDelete: return "delete";
    case Op::kNumKeys: return "numKeys";
    case Op::kWatch: return "watch";
  }
  return "unknown";
}

bool Request::operator==(const Request& o) const {
  return op == o.op && keys == o.keys && value == o.value && expected == o.expected &&
         number == o.number && wait_ms == o.wait_ms && conditions == o.conditions;
}

bool Holds(const Condition& c, const Bytes* value) {
  if (c.kind == Condition::kChanged) {
    return value == nullptr ? !c.operand.empty() : *value != c.operand;
  }
  if (value == nullptr || value->empty() || value->size() > 20) return false;
  const std::string have(value->begin(), value->end()), want(c.operand.begin(), c.operand.end());
  char* end = nullptr;
  const long long h = std::strtoll(have.c_str(), &end, 10);
  if (end != have.c_str() + have.size()) return false;
  const long long w = std::strtoll(want.c_str(), &end, 10);
  if (want.empty() || end != want.c_str() + want.size()) return false;
  return h >= w;
}

std::string EncodeValues(const std::vector<const Bytes*>& values) {
  std::string out;
  for (const Bytes* v : values) {
    out.push_back(v != nullptr ? 1 : 0);
    if (v != nullptr) PutBytes(&out, v->data(), v->size());
  }
  return out;
}

Status DecodeValues(const Bytes& encoded, size_t count, std::vector<std::optional<Bytes>>* out) {
  out->clear();
  Reader in(encoded.data(), encoded.size());
  for (size_t i = 0; i < count; ++i) {
    if (in.left() < 1) return Status::InvalidArgument("watch values cut short");
    const uint8_t present = in.Byte();
    if (present > 1) return Status::InvalidArgument("watch values: a bad presence byte");
    if (present == 0) {
      out->push_back(std::nullopt);
    } else {
      out->push_back(in.Field("watched value", kMaxValueBytes));
    }
  }
  return in.Done();
}

std::string EncodeRequest(const Request& r) {
  std::string b(1, static_cast<char>(r.op));
  auto key = [&](size_t i) {
    const std::string& k = i < r.keys.size() ? r.keys[i] : std::string();
    PutBytes(&b, k.data(), k.size());
  };
  auto keys = [&] {
    PutU32(&b, static_cast<uint32_t>(r.keys.size()));
    for (size_t i = 0; i < r.keys.size(); ++i) key(i);
  };
  switch (r.op) {
    case Op::kHello:
      b.append(kMagic, 8);
      PutU32(&b, static_cast<uint32_t>(r.number));
      break;
    case Op::kSet:
      key(0);
      PutBytes(&b, r.value.data(), r.value.size());
      break;
    case Op::kGet:
      key(0);
      PutU32(&b, r.wait_ms);
      break;
    case Op::kWait:
      PutU32(&b, r.wait_ms);
      keys();
      break;
    case Op::kAdd:
      key(0);
      PutI64(&b, r.number);
      break;
    case Op::kCheck:
      keys();
      break;
    case Op::kCompareSet:
      key(0);
      PutBytes(&b, r.expected.data(), r.expected.size());
      PutBytes(&b, r.value.data(), r.value.size());
      break;
    case Op::kDelete:
      key(0);
      break;
    case Op::kNumKeys:
      break;
    case Op::kWatch:
      PutU32(&b, r.wait_ms);
      PutU32(&b, static_cast<uint32_t>(r.conditions.size()));
      for (const Condition& c : r.conditions) {
        PutBytes(&b, c.key.data(), c.key.size());
        b.push_back(static_cast<char>(c.kind));
        PutBytes(&b, c.operand.data(), c.operand.size());
      }
      break;
  }
  return Frame(std::move(b));
}

std::string EncodeReply(const Reply& r) {
  std::string b(1, static_cast<char>(r.code));
  PutI64(&b, r.number);
  PutBytes(&b, r.value.data(), r.value.size());
  return Frame(std::move(b));
}

Status DecodeRequest(const uint8_t* body, size_t n, Request* out) {
  *out = Request();
  if (n == 0) return Status::InvalidArgument("an empty frame");
  if (body[0] == 0 || body[0] >= kOpCount) {
    return Status::InvalidArgument("unknown request " + std::to_string(body[0]));
  }
  out->op = static_cast<Op>(body[0]);
  Reader in(body + 1, n - 1);
  if (HasOneKey(out->op)) out->keys.push_back(in.Key());
  switch (out->op) {
    case Op::kHello: {
      if (in.left() < 8 || std::memcmp(body + 1, kMagic, 8) != 0) {
        return Status::InvalidArgument("not a ddp store greeting");
      }
      out->value.assign(body + 1, body + 9);
      Reader rest(body + 9, n - 9);
      out->number = rest.U32("version");
      return rest.Done();
    }
    case Op::kSet:
      out->value = in.Field("value", kMaxValueBytes);
      break;
    case Op::kGet:
      out->wait_ms = in.U32("wait");
      break;
    case Op::kWait:
      out->wait_ms = in.U32("wait");
      [[fallthrough]];
    case Op::kCheck: {
      const uint32_t count = in.U32("key count");
      if (count > kMaxKeysPerRequest) {
        return Status::InvalidArgument(std::to_string(count) + " keys in one request (at most " +
                                       std::to_string(kMaxKeysPerRequest) + ")");
      }
      for (uint32_t i = 0; i < count && in.ok(); ++i) out->keys.push_back(in.Key());
      break;
    }
    case Op::kAdd:
      out->number = in.I64("delta");
      break;
    case Op::kCompareSet:
      out->expected = in.Field("expected value", kMaxValueBytes);
      out->value = in.Field("desired value", kMaxValueBytes);
      break;
    case Op::kDelete:
    case Op::kNumKeys:
      break;
    case Op::kWatch: {
      out->wait_ms = in.U32("wait");
      const uint32_t count = in.U32("condition count");
      if (count > kMaxKeysPerRequest) {
        return Status::InvalidArgument(std::to_string(count) + " conditions in one watch (at most " +
                                       std::to_string(kMaxKeysPerRequest) + ")");
      }
      for (uint32_t i = 0; i < count && in.ok(); ++i) {
        Condition c;
        c.key = in.Key();
        const uint8_t kind = in.Byte();
        if (in.ok() && kind > Condition::kAtLeast) {
          return Status::InvalidArgument("unknown condition kind " + std::to_string(kind));
        }
        c.kind = static_cast<Condition::Kind>(kind);
        c.operand = in.Field("operand", kMaxValueBytes);
        out->conditions.push_back(std::move(c));
      }
      break;
    }
  }
  if (out->wait_ms > kMaxWaitMs) {
    return Status::InvalidArgument("a wait of " + std::to_string(out->wait_ms) + " ms");
  }
  return in.Done();
}

Status DecodeReply(const uint8_t* body, size_t n, Reply* out) {
  *out = Reply();
  if (n == 0) return Status::InvalidArgument("an empty reply");
  if (body[0] > static_cast<uint8_t>(Code::kError)) {
    return Status::InvalidArgument("unknown reply code " + std::to_string(body[0]));
  }
  out->code = static_cast<Code>(body[0]);
  Reader in(body + 1, n - 1);
  out->number = in.I64("number");
  out->value = in.Field("value", kMaxValueBytes);
  return in.Done();
}

Status FrameLength(const uint8_t* p, uint32_t* length) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  if (v == 0) return Status::InvalidArgument("a frame of 0 bytes");
  if (v > kMaxFrameBytes) {
    return Status::InvalidArgument("a frame of " + std::to_string(v) + " bytes (at most " +
                                   std::to_string(kMaxFrameBytes) + ")");
  }
  *length = v;
  return Status::OK();
}

}  // namespace ddp::store
