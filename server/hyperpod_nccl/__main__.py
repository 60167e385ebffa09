from hyperpod_nccl.cli import main

raise SystemExit(main())
