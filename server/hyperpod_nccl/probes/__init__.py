"""On-node evidence: the project's own read-only probe scripts, the runners that carry them to
a node (SSM, this host, or recorded output), and the parsers that read their output."""
