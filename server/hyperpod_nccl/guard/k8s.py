"""Read-only enforcement for the Kubernetes API: GET only, and no exec/attach/portforward/proxy.

The check sits in `call_api`, the single method every generated API call goes through before
the REST client opens a connection, so a refused request never leaves the process.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from kubernetes.client import ApiClient, Configuration
from urllib3.util.retry import Retry

# (connect, read) seconds for every request; a tool call as a whole has the server's deadline.
REQUEST_TIMEOUT = (5.0, 30.0)
# Subresources that run code or tunnel traffic into the cluster, even over GET.
FORBIDDEN_SUBRESOURCES = frozenset({"exec", "attach", "portforward", "proxy"})


class KubernetesReadOnlyViolation(PermissionError):
    def __init__(self, method: str, path: str, why: str) -> None:
        self.method = method
        self.path = path
        super().__init__(
            f"hyperpod-nccl is read-only: refused {method} {path} ({why}) before it was sent. "
            "Suggest the kubectl command to the user instead of running it."
        )


def subresource_of(path: str) -> str | None:
    """The subresource a request path addresses, e.g. `exec` in /api/v1/namespaces/a/pods/b/exec."""
    segments = [s for s in path.split("/") if s]
    if segments[:1] == ["api"]:
        rest = segments[2:]  # api/<version>/...
    elif segments[:1] == ["apis"]:
        rest = segments[3:]  # apis/<group>/<version>/...
    else:
        return None
    if len(rest) >= 2 and rest[0] == "namespaces":
        rest = rest[2:] or rest  # namespaces/<ns>/<resource>/<name>/<subresource>
    return rest[2] if len(rest) >= 3 else None


def check_request(method: str, url: str) -> None:
    path = urlsplit(url).path
    if method.upper() != "GET":
        raise KubernetesReadOnlyViolation(method.upper(), path, "only GET is allowed")
    subresource = subresource_of(path)
    if subresource in FORBIDDEN_SUBRESOURCES:
        raise KubernetesReadOnlyViolation(method.upper(), path, f"the {subresource} subresource is refused")


class ReadOnlyApiClient(ApiClient):
    """The only Kubernetes ApiClient the product uses: GET only, and never without a time limit."""

    def call_api(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        check_request(method, url)
        if len(args) < 4 and kwargs.get("_request_timeout") is None:
            kwargs["_request_timeout"] = REQUEST_TIMEOUT
        return super().call_api(method, url, *args, **kwargs)


def read_only_api_client(configuration: Configuration) -> ReadOnlyApiClient:
    # A silent API server does not answer a second time either: retry a refused connection once,
    # never a read that timed out (urllib3's default of three retries made one call last 4 x 60 s).
    configuration.retries = Retry(total=2, connect=2, read=0, status=0, other=0, backoff_factor=0.5)
    return ReadOnlyApiClient(configuration=configuration)
