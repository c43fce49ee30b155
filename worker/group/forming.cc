// A communicator's creation that a join can leave (see forming.h).
#include "worker/group/forming.h"

#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

namespace ddp::worker::group {
namespace {

std::atomic<size_t> g_left{0};

// Shared by the joining thread and the creation's: whichever outlives the other frees it.
struct Creation {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<MadeCommunicator> made;  // set once make returned, unless left
  bool left = false;                     // the join went on without it
};

void Run(const std::shared_ptr<Creation>& c, const std::function<MadeCommunicator()>& make) {
  MadeCommunicator m = Status::Internal("communicator creation did not run");
  try {
    m = make();
  } catch (const std::exception& e) {
    m = Status::Unavailable(std::string("communicator creation failed: ") + e.what());
  }
  std::unique_lock<std::mutex> lock(c->mu);
  if (!c->left) {
    c->made.emplace(std::move(m));
    c->cv.notify_all();
    return;
  }
  lock.unlock();
  // Made for a generation that is gone: its peers went on without it.
  if (m.ok() && *m) {
    (*m)->Abort();
    m->reset();
  }
  g_left.fetch_sub(1);
}

}  // namespace

MadeCommunicator MakeUnlessCancelled(std::function<MadeCommunicator()> make,
                                     const std::function<std::string()>& cancelled,
                                     std::chrono::milliseconds interval) {
  auto c = std::make_shared<Creation>();
  std::thread([c, make = std::move(make)] { Run(c, make); }).detach();
  std::unique_lock<std::mutex> lock(c->mu);
  auto leave = [&] {
    c->left = true;
    g_left.fetch_add(1);
  };
  while (!c->cv.wait_for(lock, interval, [&] { return c->made.has_value(); })) {
    lock.unlock();
    std::string why;
    try {
      why = cancelled();
    } catch (...) {
      lock.lock();
      if (!c->made) leave();
      throw;
    }
    lock.lock();
    if (!why.empty() && !c->made) {
      leave();
      return Status::Unavailable(why + " while its communicator formed: the creation is left to " +
                                 "end on its own (" + std::to_string(g_left.load()) +
                                 " such creation(s) under way in this process)");
    }
  }
  return std::move(*c->made);
}

size_t CreationsLeft() { return g_left.load(); }

}  // namespace ddp::worker::group
