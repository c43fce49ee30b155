#!/usr/bin/env bash
# One prepared run on a GPU machine (one H100 or H200) that has CUDA, a CUDA PyTorch, CMake and
# nothing else of ours: builds the worker and its gpu tests against that PyTorch's LibTorch and
# NCCL, runs `ctest -L gpu`, then measures GPT-2 small and the bench minGPT (bf16, world size 1,
# NCCL) with ddp-worker against Python eager DDP and torch.compile on the same model and batch.
#
#   bench/gpu/run-device.sh OUT_DIR [DEBS_DIR]
#
# DEBS_DIR (default .device/debs) holds the Debian packages the build needs besides LibTorch,
# unpacked with `dpkg -x` into a private prefix; fetch them on a Debian machine with
#   apt-get download libgtest-dev libyaml-cpp-dev libyaml-cpp0.7 libgloo-dev ninja-build \
#     prometheus-cpp-dev libprometheus-cpp-core1.0
# (libgloo-dev for Gloo's headers, which PyTorch wheels do not ship; prometheus-cpp for
# common/, found through CMAKE_PREFIX_PATH). Every phase is time-boxed
# and the whole run keeps to BUDGET seconds (default 380): a phase that does not fit is skipped.
# OUT_DIR gets summary.txt (what stdout shows) and logs.tgz (every log). Knobs: STEPS (40),
# BATCH (16), PEAK_TFLOPS (989: H100 SXM and H200 dense bf16), SKIP_BUILD=1 (Python only),
# SKIP_UNIT=1 (no unit tests), SKIP_BENCH=1 (build and tests only), SKIP_COMPILE=1 (no
# torch.compile), BUILD_DIR.
set -uo pipefail
out=${1:?usage: run-device.sh OUT_DIR [DEBS_DIR]}
root=$(cd "$(dirname "$0")/../.." && pwd)
debs=$(cd "${2:-$root/.device/debs}" 2>/dev/null && pwd || echo "")
BUDGET=${BUDGET:-380}; STEPS=${STEPS:-40}; BATCH=${BATCH:-16}; PEAK_TFLOPS=${PEAK_TFLOPS:-989}
build=${BUILD_DIR:-/tmp/ddp-gpu-build}
bin=$build/worker/ddp-worker
logs=/tmp/ddp-gpu-logs; rm -rf "$logs"; mkdir -p "$logs" "$out"
PY=${PY:-python3}
t0=$SECONDS
export PYTHONUNBUFFERED=1 NCCL_DEBUG=${NCCL_DEBUG:-WARN}
export root debs build bin logs PY BATCH STEPS

save() { tar -C "$logs" -czf "$out/logs.tgz" . 2>/dev/null; }
say() { echo "$*" | tee -a "$out/summary.txt"; }
left() { echo $((BUDGET - (SECONDS - t0))); }
# phase NAME MAX_S CMD...: runs CMD (a command or an exported function; output in
# $logs/NAME.log) if at least 15 s are left, for at most MAX_S or what is left; prints the log's
# last TAIL lines.
phase() {
  local name=$1 max=$2; shift 2
  local l; l=$(left)
  if (( l < 15 )); then say "== $name: SKIPPED (budget spent)"; return 99; fi
  (( max > l )) && max=$l
  local s=$SECONDS
  echo "== $name (limit ${max}s, at +$((SECONDS - t0))s)"
  PHASE=$name timeout -k 5 "$max" bash -c '"$@"' bash "$@" >"$logs/$name.log" 2>&1
  local rc=$?
  say "== $name: rc=$rc in $((SECONDS - s))s$([[ $rc == 124 ]] && echo ' (TIMED OUT)')"
  tail -n "${TAIL:-12}" "$logs/$name.log"
  save
  return $rc
}

# Peak device memory (MiB, as nvidia-smi reports it) while CMD runs.
with_mem() {
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 >"$logs/$PHASE.mem" 2>/dev/null &
  local smi=$!
  "$@"; local rc=$?
  kill "$smi" 2>/dev/null; wait "$smi" 2>/dev/null
  echo "peak_device_mib=$(sort -n "$logs/$PHASE.mem" | tail -1)"
  return $rc
}

env_info() {
  grep -E '^(PRETTY_NAME|VERSION_ID)=' /etc/os-release; uname -r; nproc; free -g | head -2
  nvidia-smi | head -12
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv
  g++ --version | head -1; cmake --version | head -1; (ninja --version || echo "no ninja") 2>&1
  (nvcc --version || /usr/local/cuda/bin/nvcc --version) 2>&1 | tail -2; ls -d /usr/local/cuda* 2>&1
  "$PY" - <<'PY'
import os, torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", ".".join(map(str, torch.cuda.nccl.version())),
      "cudnn", torch.backends.cudnn.version(), "cxx11_abi", torch._C._GLIBCXX_USE_CXX11_ABI)
print("device", torch.cuda.get_device_name(0), torch.cuda.get_device_capability(0),
      "sms", torch.cuda.get_device_properties(0).multi_processor_count)
print("cmake_prefix", torch.utils.cmake_prefix_path)
inc = os.path.join(os.path.dirname(torch.__file__), "include")
print("gloo headers:", os.path.isdir(os.path.join(inc, "gloo")),
      "c10d headers:", os.path.isdir(os.path.join(inc, "torch/csrc/distributed/c10d")))
try:
    import nvidia.nccl as n
    d = list(n.__path__)[0]
    print("nccl_root", d, sorted(os.listdir(d)))
except Exception as e:
    print("no nvidia.nccl package:", e)
PY
}

# LibTorch's own CMake config (it enables the CUDA language: nvcc must match the toolkit).
configure() {
  local pre=/tmp/ddp-debroot gen=() torch_prefix nccl_root nvcc
  rm -rf "$pre"; mkdir -p "$pre"
  for d in "$debs"/*.deb; do dpkg -x "$d" "$pre" || return 1; done
  torch_prefix=$("$PY" -c 'import torch; print(torch.utils.cmake_prefix_path)')
  nccl_root=$("$PY" -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>/dev/null || echo /usr/local/cuda)
  if command -v ninja >/dev/null; then gen=(-G Ninja)
  elif [[ -x $pre/usr/bin/ninja ]]; then gen=(-G Ninja -DCMAKE_MAKE_PROGRAM=$pre/usr/bin/ninja); fi
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  NCCL_ROOT=$nccl_root cmake -S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DDDP_BUILD_OPERATOR=OFF -DBUILD_TESTING=ON -DCMAKE_PREFIX_PATH="$torch_prefix;$pre/usr" \
    -DGTest_DIR="$pre/usr/lib/x86_64-linux-gnu/cmake/GTest" \
    -Dyaml-cpp_DIR="$pre/usr/lib/x86_64-linux-gnu/cmake/yaml-cpp" \
    -DCMAKE_CUDA_COMPILER="$nvcc" -DCUDAToolkit_ROOT="$(dirname "$(dirname "$nvcc")")" \
    -DCMAKE_CUDA_ARCHITECTURES=90
}
# The worker, its gpu tests and the optimizer bench only; -k 0 reports every failing file.
compile() {
  cmake --build "$build" -j16 --target ddp-worker worker_gpu_test worker_nccl_test optimizer_bench \
    -- -k 0
}
ctest_gpu() { cd "$build" && ctest -L gpu --output-on-failure --timeout 120; }
# The unit tests of the worker (and common) against this LibTorch.
unit() {
  cmake --build "$build" -j16 --target worker_unit_test worker_buckets_test common_test \
    worker_nccl_communicator_test worker_reducer_abandon_test -- -k 0 >"$logs/unit-build.log" 2>&1 \
    || { grep -E ' error|FAILED' "$logs/unit-build.log" | head -20; return 1; }
  cd "$build" && ctest -L unit -j8 --timeout 60 --output-on-failure 2>&1 | tail -40
}
# After a failed ctest: each crashed test once more under cuda-gdb (a backtrace), and the logs
# of the ddp-worker processes the e2e tests left behind.
debug_gpu_tests() {
  cd "$build" || return 1
  local t bin
  for t in $(sed -n 's/.* - \([A-Za-z0-9_]*\.[A-Za-z0-9_]*\) (SEGFAULT).*/\1/p' "$logs/ctest_gpu.log"); do
    case $t in Nccl*) bin=tests/worker_comm/worker_nccl_test ;; *) bin=tests/worker/worker_gpu_test ;; esac
    echo "=== $t under cuda-gdb"
    timeout 60 cuda-gdb -batch -ex 'set pagination off' -ex 'handle SIGCHLD nostop noprint' \
      -ex run -ex bt -ex 'info threads' --args "$bin" --gtest_filter="$t" 2>&1 | grep -v '^\[New Thread\|^\[Thread' | tail -45
  done
  for f in /tmp/ddp-gpu*/*.err /tmp/ddp-gpu*/*.out; do
    [[ -f $f ]] && { echo "=== $f"; tail -n 8 "$f"; }
  done
}

port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# ddp-worker: world size 1 through the NCCL communicator (reducer, buckets, streams and events run).
worker() {
  MASTER_ADDR=127.0.0.1 MASTER_PORT=$(port) WORLD_SIZE=1 RANK=0 LOCAL_RANK=0 \
    with_mem "$bin" --device cuda --bf16 true --batch-size "$BATCH" --steps "$STEPS" \
    --synthetic-tokens 2000000 --log-every 10 "$@"
}
# Python DDP (NCCL) on the same model, batch and steps.
torch_ddp() {
  with_mem "$PY" "$root/bench/worker/torch_ddp_bench.py" --device cuda --world-size 1 \
    --steps "$STEPS" --batch-size "$BATCH" --n-layer 12 --n-head 12 --n-embd 768 \
    --block-size 1024 --vocab 50304 --tokens 2000000 --threads 4 --log-every 10 "$@"
}
export -f with_mem env_info configure compile ctest_gpu debug_gpu_tests unit port worker torch_ddp

# 1. The machine.
TAIL=40 phase env 40 env_info
tail -n 40 "$logs/env.log" >>"$out/summary.txt"

# 2. Build.
ok_build=0
if [[ ${SKIP_BUILD:-0} != 1 ]]; then
  if phase configure 90 configure; then
    TAIL=30 phase build 240 compile && ok_build=1
    grep -E ' error|Error [0-9]|FAILED' "$logs/build.log" | head -60
  else
    grep -iE 'error' -A4 "$logs/configure.log" | head -60
  fi
fi

# 3. The gpu tests, then (unless SKIP_UNIT=1) the unit tests.
if (( ok_build )); then
  TAIL=45 phase ctest_gpu 150 ctest_gpu || TAIL=150 phase debug_gpu_tests 120 debug_gpu_tests
fi
if (( ok_build )) && [[ ${SKIP_UNIT:-0} != 1 ]]; then TAIL=40 phase unit 150 unit; fi
if [[ ${SKIP_BENCH:-0} == 1 ]]; then say "total $((SECONDS - t0))s (benchmarks skipped)"; save; exit 0; fi

# 4. Measurements: GPT-2 small (tied, vocabulary 50257 padded to 50304) and the bench minGPT
# (untied head, vocabulary 50304); L=12 H=12 C=768 T=1024.
gpt2_w=(--model gpt2 --block-size 1024 --synthetic-vocab 50257)
mingpt_w=(--model mingpt --n-layer 12 --n-head 12 --n-embd 768 --block-size 1024 --synthetic-vocab 50304)
if (( ok_build )); then phase worker_gpt2 60 worker "${gpt2_w[@]}"; fi
phase torch_gpt2 60 torch_ddp --tie-embeddings 1
if (( ok_build )); then phase worker_mingpt 60 worker "${mingpt_w[@]}"; fi
phase torch_mingpt 60 torch_ddp
if [[ ${SKIP_COMPILE:-0} != 1 ]]; then
  STEPS=$((STEPS + 20)) phase torch_gpt2_compile 150 torch_ddp --tie-embeddings 1 --compile 1 --warmup 20
fi
if (( ok_build )); then
  phase optimizer_bench 40 "$build/bench/worker/optimizer_bench" --device cuda --steps 20
fi

# 5. The table (llm.c's FLOPs: 6 N + 6 L C T per token; peak PEAK_TFLOPS dense bf16).
"$PY" "$root/bench/gpu/summarize.py" "$logs" --peak-tflops "$PEAK_TFLOPS" 2>&1 | tee -a "$out/summary.txt"
say "total $((SECONDS - t0))s"
save
