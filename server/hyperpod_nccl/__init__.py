"""hyperpod-nccl: read-only diagnosis of NCCL and distributed-training failures on GPU clusters."""

__version__ = "0.1.0"
