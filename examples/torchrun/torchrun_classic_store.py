"""torchrun for a torch built without libuv, such as Debian 13's python3-torch 2.6.

From torch 2.4 on, torchrun's rendezvous and the trainer's init_process_group ask for c10d's
libuv TCPStore server, and such a torch refuses: "use_libuv was requested but PyTorch was build
without libuv support", whatever USE_LIBUV says. This runs torchrun (torch.distributed.run)
with the arguments it is given, classic_store/ on PYTHONPATH (its sitecustomize.py makes
TCPStore fall back to the classic server, in torchrun and in every process it starts) and
USE_LIBUV=0 for init_process_group(env://):

    python3 torchrun_classic_store.py --redirects 1 --tee 1 ddp_train.py --steps 300

On a torch with libuv, or before 2.4, it behaves as plain torchrun. The process is replaced by
torchrun (same pid), so signals reach torchrun as they would.
"""
import os
import sys

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "classic_store")
path = os.environ.get("PYTHONPATH")
os.environ["PYTHONPATH"] = here + (os.pathsep + path if path else "")
os.environ.setdefault("USE_LIBUV", "0")
os.execv(sys.executable, [sys.executable, "-m", "torch.distributed.run"] + sys.argv[1:])
