from hyperpod_nccl.entry import main

# Guarded so a worker process started with "spawn" can import this module without re-running it.
if __name__ == "__main__":
    raise SystemExit(main())
