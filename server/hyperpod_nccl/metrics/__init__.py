"""GPU metrics from Prometheus: the DCGM field catalogue (`fields`), the window (`window`), the
service the CLI, the MCP tool and the diagnostic share (`service`), and its faces (`cli`, `tool`).

The HTTP reader lives in collect/prometheus.py and the collection plan in collect/dcgm.py; the
checks are pure analyzers in analyze/metrics_*.py."""
