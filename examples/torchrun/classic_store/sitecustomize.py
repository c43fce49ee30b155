"""c10d's TCPStore falls back to its classic server where this torch has no libuv.

Python loads this file at the start of every process whose PYTHONPATH holds its folder:
torchrun_classic_store.py puts it there for torchrun and, through the environment, for the
training processes torchrun starts. From torch 2.4 on, torchrun's rendezvous and a trainer's
init_process_group ask for the libuv server, which a torch built without libuv (Debian 13's
python3-torch 2.6) refuses. Elsewhere TCPStore is left as it is.
"""
import sys


def _install():
    try:
        import torch.distributed as dist
    except ImportError:
        return
    if not dist.is_available() or getattr(dist.TCPStore, "ddp_classic_fallback", False):
        return
    base = dist.TCPStore

    class ClassicTCPStore(base):
        ddp_classic_fallback = True

        def __init__(self, *args, **kwargs):
            try:
                super().__init__(*args, **kwargs)
            except RuntimeError as e:
                if "libuv" not in str(e) or kwargs.get("use_libuv"):
                    raise
                kwargs["use_libuv"] = False
                super().__init__(*args, **kwargs)

    # Modules that imported the name already hold the class itself; later imports read dist's.
    for name, module in list(sys.modules.items()):
        if name.startswith("torch.distributed") and getattr(module, "TCPStore", None) is base:
            module.TCPStore = ClassicTCPStore


_install()
