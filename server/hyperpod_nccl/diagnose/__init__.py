"""The cluster diagnostic: `service` collects a Snapshot and runs the analyzers over it, `cause`
picks the root cause among the cluster findings, `cli` and `tool` / `k8s_tool` are its faces.

Kept free of imports so that loading the CLI or the MCP server does not pull in boto3."""
