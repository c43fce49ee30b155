// A store for creating a generation's communicator that gives up when the generation does.
// Gloo and NCCL set up through blocking store reads (a peer's address, the NCCL unique id); a
// member that dies after arriving but before publishing would leave the others blocked in them up
// to the collective timeout. Here every blocking read is a poll that, between tries, asks
// `cancelled()` (the generation moved on, the group stops or is abandoned) and then throws, so
// the communicator's creation fails at once and the member joins the next generation instead.
#ifndef DDP_WORKER_GROUP_FENCED_STORE_H_
#define DDP_WORKER_GROUP_FENCED_STORE_H_

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace ddp::worker::group {

// Thread-compatible (one thread creates the communicator). Delegates to `inner`; get() and
// wait() poll inner->check() every `interval` until the key exists, cancelled() returns a
// reason (thrown as std::runtime_error("<reason>")) or the store's timeout passes (thrown as
// c10d does: std::runtime_error naming the keys).
class FencedStore : public c10d::Store {
 public:
  FencedStore(c10::intrusive_ptr<c10d::Store> inner, std::function<std::string()> cancelled,
              std::chrono::milliseconds interval = std::chrono::milliseconds(10));

  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> compareSet(const std::string& key, const std::vector<uint8_t>& current,
                                  const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t value) override;
  bool deleteKey(const std::string& key) override;
  bool check(const std::vector<std::string>& keys) override;
  int64_t getNumKeys() override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;
  // A FencedStore with the same cancellation over a clone of `inner` (over `inner` itself where
  // LibTorch's Store has no clone()). LibTorch 2.x declares Store::clone() pure virtual, 1.13 not
  // at all: declared without `override`, it overrides where the base has it and is a plain
  // member where not, so both build.
  c10::intrusive_ptr<c10d::Store> clone();

 private:
  c10::intrusive_ptr<c10d::Store> inner_;
  std::function<std::string()> cancelled_;
  std::chrono::milliseconds interval_;
};

}  // namespace ddp::worker::group

#endif  // DDP_WORKER_GROUP_FENCED_STORE_H_
