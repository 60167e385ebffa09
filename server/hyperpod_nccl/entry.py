"""The `hyperpod-nccl` command's first module: standard library only, so `serve` on stdio can open
its front door (front_door.py) before the rest of the program loads."""

from __future__ import annotations

import sys

from hyperpod_nccl import __version__
from hyperpod_nccl.front_door import open_front_door


def main() -> int:
    open_front_door(sys.argv[1:], __version__)
    from hyperpod_nccl.cli import main as cli_main

    return cli_main()
