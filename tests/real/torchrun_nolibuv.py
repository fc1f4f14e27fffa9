# SPDX-License-Identifier: Apache-2.0
"""torchrun for a PyTorch built without libuv (Debian's 2.6): torchrun's
static rendezvous creates its TCPStore with libuv requested and fails ("use_libuv
was requested but PyTorch was build without libuv support"); this launcher
makes use_libuv=False the default of every TCPStore the launcher creates,
then runs torchrun itself (torch.distributed.run.main) with the same
arguments. Workers should meet through a FileStore (ddp_leak.py does)."""
import sys

import torch.distributed as dist
import torch.distributed.elastic.rendezvous.static_tcp_rendezvous as static
import torch.distributed.rendezvous as rendezvous

_TCPStore = dist.TCPStore


def TCPStore(*args, **kwargs):
    kwargs.setdefault("use_libuv", False)
    return _TCPStore(*args, **kwargs)


for module in (dist, static, rendezvous):
    module.TCPStore = TCPStore

if __name__ == "__main__":
    from torch.distributed.run import main

    sys.exit(main())
