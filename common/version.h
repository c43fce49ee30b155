// The release of ddp-operator and ddp-worker, from CMakeLists.txt's project(VERSION) through a
// generated source (common/version.cc.in), so changing it rebuilds one file.
#ifndef DDP_COMMON_VERSION_H_
#define DDP_COMMON_VERSION_H_

namespace ddp {

// "0.1.0": the project's version as CMake configured it. Never null; a static string.
const char* Version();

}  // namespace ddp

#endif  // DDP_COMMON_VERSION_H_
