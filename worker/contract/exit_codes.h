// The worker's exit codes, the contract with the operator (DESIGN.md "Worker exit codes"). Below
// every layer that ends a process (main.cc, launch/) and train/, which maps a Status to one
// (train/exit_codes.h ExitCodeFor).
#ifndef DDP_WORKER_CONTRACT_EXIT_CODES_H_
#define DDP_WORKER_CONTRACT_EXIT_CODES_H_

namespace ddp::worker {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInvalidConfig = 2;  // permanent: restarting cannot fix a bad config
inline constexpr int kExitInvalidData = 3;    // permanent: missing/empty/corrupt data
inline constexpr int kExitRetryable = 75;     // EX_TEMPFAIL: peer lost, timeout, preempted

}  // namespace ddp::worker

#endif  // DDP_WORKER_CONTRACT_EXIT_CODES_H_
