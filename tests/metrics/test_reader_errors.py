"""The Prometheus reader's error paths over real HTTP semantics (respx): every way a Prometheus,
a proxy in front of it or Amazon Managed Prometheus can fail becomes a collection issue with a
reason, never a crash, and the series bound cuts and says so. Label values are data."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import respx

from hyperpod_nccl.collect.dcgm import collect_dcgm, node_matcher
from hyperpod_nccl.collect.prometheus import PrometheusError, PrometheusReader, ReaderLimits
from hyperpod_nccl.guard.prometheus import PrometheusReadOnlyViolation, check_read
from hyperpod_nccl.metrics.service import MetricsOptions, MetricsSource, metrics_report, metrics_snapshot
from hyperpod_nccl.metrics.window import Window
from hyperpod_nccl.snapshot import Snapshot

URL = "http://prometheus.test:9090"
WINDOW = Window(1772445600, 1772452800, "two hours")


def _ok(data: Any) -> httpx.Response:
    return httpx.Response(200, json={"status": "success", "data": data})


def _vector(rows: list[dict[str, str]]) -> httpx.Response:
    return _ok({"resultType": "vector", "result": [{"metric": r, "value": [WINDOW.end, "1"]} for r in rows]})


def _matrix(rows: list[dict[str, str]], value: str = "1") -> httpx.Response:
    points = [[WINDOW.start, value], [WINDOW.start + 30, value]]
    return _ok({"resultType": "matrix", "result": [{"metric": r, "values": points} for r in rows]})


def _gpus(nodes: int, per_node: int = 8) -> list[dict[str, str]]:
    return [{"Hostname": f"node-{n:03d}", "gpu": str(g)} for n in range(nodes) for g in range(per_node)]


def _reader(**limits: Any) -> PrometheusReader:
    return PrometheusReader(URL, limits=ReaderLimits(**limits) if limits else None)


def _fails(response: httpx.Response | Exception) -> PrometheusError:
    with respx.mock:
        respx.post(f"{URL}/api/v1/query").mock(side_effect=response) if isinstance(
            response, Exception
        ) else respx.post(f"{URL}/api/v1/query").mock(return_value=response)
        with pytest.raises(PrometheusError) as raised, _reader() as reader:
            reader.instant("up", WINDOW.end)
    return raised.value


@pytest.mark.parametrize(
    ("answer", "kind", "says"),
    [
        (httpx.ConnectTimeout("connect timed out"), "timeout", "no answer within"),
        (httpx.ReadTimeout("read timed out"), "timeout", "no answer within"),
        (httpx.ConnectError("connection refused"), "unreachable", "connection refused"),
        (httpx.Response(401), "access_denied", "aps:QueryMetrics"),
        (httpx.Response(403), "access_denied", "grant aps:QueryMetrics"),
        (httpx.Response(404, text="404 page not found"), "not_found", "base URL"),
        (httpx.Response(429), "throttled", "rate limiting"),
        (httpx.Response(302, headers={"location": "https://sso.example/login"}), "error", "sso.example"),
        (httpx.Response(502, text="<html>Bad Gateway</html>"), "error", "not a Prometheus answer"),
        (httpx.Response(200, text="<html><body>Sign in</body></html>"), "error", "not a Prometheus answer"),
        (httpx.Response(200, json=["not", "an", "envelope"]), "error", "no Prometheus status"),
        (
            httpx.Response(400, json={"status": "error", "errorType": "bad_data", "error": "parse error"}),
            "error",
            "bad_data: parse error",
        ),
        (
            httpx.Response(
                422, json={"status": "error", "errorType": "execution", "error": "too many samples"}
            ),
            "error",
            "execution: too many samples",
        ),
        (
            httpx.Response(503, json={"status": "error", "errorType": "timeout", "error": "query timed out"}),
            "timeout",
            "query timed out",
        ),
        (_ok({"resultType": "matrix", "result": []}), "error", "not a vector result"),
        (_ok({"resultType": "vector", "result": [{"value": [1, "1"]}]}), "error", "no metric labels"),
    ],
)
def test_every_failure_is_a_prometheus_error_of_its_kind(
    answer: httpx.Response | Exception, kind: str, says: str
) -> None:
    error = _fails(answer)
    assert error.kind == kind
    assert says in str(error)


def test_an_answer_larger_than_the_cap_is_refused() -> None:
    big = {"status": "success", "data": {"resultType": "vector", "result": [], "pad": "x" * 4096}}
    with respx.mock:
        respx.post(f"{URL}/api/v1/query").mock(return_value=httpx.Response(200, content=json.dumps(big)))
        with (
            pytest.raises(PrometheusError, match="answer larger than"),
            _reader(max_response_bytes=1024) as r,
        ):
            r.instant("up", WINDOW.end)


def test_every_query_names_its_time_and_a_server_side_timeout() -> None:
    with respx.mock:
        route = respx.post(f"{URL}/api/v1/query_range").mock(return_value=_matrix([]))
        with _reader() as reader:
            reader.range("up", WINDOW.start, WINDOW.end, 30)
        form = dict(httpx.QueryParams(route.calls.last.request.content.decode()))
    assert form == {
        "query": "up",
        "start": str(WINDOW.start),
        "end": str(WINDOW.end),
        "step": "30s",
        "timeout": "29s",
    }


def test_the_guard_refuses_anything_but_the_query_endpoints() -> None:
    assert check_read("POST", "/api/v1/query_range") == "aps:QueryMetrics"
    assert check_read("GET", "/api/v1/series") == "aps:GetSeries"
    for method, path in (
        ("POST", "/api/v1/admin/tsdb/delete_series"),
        ("POST", "/-/quit"),
        ("PUT", "/api/v1/query"),
    ):
        with pytest.raises(PrometheusReadOnlyViolation):
            check_read(method, path)


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://admin:hunter2@prometheus:9090", "no credentials"),
        ("ftp://prometheus", "http(s) URL"),
        ("http://prometheus:9090/api/v1", "without /api/v1"),
        ("http://prometheus:9090/?x=1", "query string"),
        ("http://prometheus:9090/\nx", "control characters"),
    ],
)
def test_unusable_urls_are_refused_with_the_reason(url: str, says: str) -> None:
    with pytest.raises(ValueError) as raised:
        MetricsSource(prometheus=url)
    assert says in str(raised.value)


def _serve(inventory: list[dict[str, str]], fields: dict[str, httpx.Response] | None = None) -> None:
    respx.post(f"{URL}/api/v1/query").mock(return_value=_vector(inventory))
    respx.post(f"{URL}/api/v1/query_range").mock(
        side_effect=lambda request: (fields or {}).get("any", _matrix(inventory))
    )


def test_the_series_bound_keeps_whole_nodes_and_says_what_it_cut() -> None:
    with respx.mock:
        _serve(_gpus(5))
        ranges = respx.routes[1]
        with _reader() as reader:
            snapshot, issues = collect_dcgm(reader, WINDOW, source="test", query_url=URL, max_gpus=20)
        queries = [dict(httpx.QueryParams(c.request.content.decode()))["query"] for c in ranges.calls]
    assert snapshot.gpus_seen == 40 and len(snapshot.gpus) == 16
    assert snapshot.cut and "kept 16 GPUs on the first 2 nodes by name (node-000 to node-001)" in snapshot.cut
    assert all('Hostname=~"node-000|node-001"' in query for query in queries), queries[0]
    assert not issues


def test_node_names_are_matched_literally() -> None:
    matcher = node_matcher("Hostname", ["ip-10-1-2-3.ec2.internal", 'a"b|c'])
    assert matcher == 'Hostname=~"ip-10-1-2-3\\\\.ec2\\\\.internal|a\\\\\\"b\\\\|c"'


def test_a_range_answer_over_the_bound_is_cut_too() -> None:
    with respx.mock:
        respx.post(f"{URL}/api/v1/query").mock(return_value=_vector(_gpus(1)))
        respx.post(f"{URL}/api/v1/query_range").mock(return_value=_matrix(_gpus(3)))
        with _reader() as reader:
            snapshot, _ = collect_dcgm(reader, WINDOW, source="test", query_url=URL, max_gpus=10)
    cut = [q for q in snapshot.queries if q.status == "cut" and q.field != "inventory"]
    assert cut and "24 series, kept the first 10" in (cut[0].message or "")


def test_prometheus_without_dcgm_series_is_a_collection_issue_not_healthy() -> None:
    with respx.mock:
        _serve([])
        snapshot = metrics_snapshot(MetricsOptions(source=MetricsSource(prometheus=URL)), WINDOW)
    assert [(i.source, i.kind) for i in snapshot.collection_issues] == [("prometheus:inventory", "not_found")]
    report = metrics_report(snapshot)
    assert [f.id for f in report.findings] == ["metrics.coverage.no_dcgm_series"]
    assert report.blocking


def test_a_failing_field_is_recorded_and_the_other_checks_still_run() -> None:
    inventory = _gpus(1)

    def answer(request: httpx.Request) -> httpx.Response:
        query = dict(httpx.QueryParams(request.content.decode()))["query"]
        if "DCGM_FI_PROF_SM_ACTIVE" in query:
            return httpx.Response(503, json={"status": "error", "errorType": "timeout", "error": "timed out"})
        return _matrix(inventory, "3" if "PCIE_LINK_GEN" in query else "16")

    with respx.mock:
        respx.post(f"{URL}/api/v1/query").mock(return_value=_vector(inventory))
        respx.post(f"{URL}/api/v1/query_range").mock(side_effect=answer)
        snapshot = metrics_snapshot(MetricsOptions(source=MetricsSource(prometheus=URL)), WINDOW)
    assert [(i.source, i.kind) for i in snapshot.collection_issues] == [("prometheus:sm_active", "timeout")]
    report = metrics_report(snapshot)
    assert any(f.id == "collection.timeout.prometheus_sm_active" for f in report.findings)
    assert any(f.id == "metrics.coverage.window" for f in report.findings)


def test_hostile_label_values_stay_data() -> None:
    hostile = {"Hostname": 'evil"; rm -rf / #\x1b[31m', "gpu": "0", "pod": "p\nq", "namespace": "ns"}
    peers = [{"Hostname": f"good-{n}", "gpu": "0"} for n in range(6)]

    def answer(request: httpx.Request) -> httpx.Response:
        query = dict(httpx.QueryParams(request.content.decode()))["query"]
        if "PCIE_LINK_WIDTH" in query:
            points = [[WINDOW.start, "16"]]
            rows = [{"metric": r, "values": points} for r in peers]
            rows.append({"metric": hostile, "values": [[WINDOW.start, "4"]]})
            return _ok({"resultType": "matrix", "result": rows})
        return _matrix([])

    with respx.mock:
        respx.post(f"{URL}/api/v1/query").mock(return_value=_vector([hostile, *peers]))
        respx.post(f"{URL}/api/v1/query_range").mock(side_effect=answer)
        snapshot = metrics_snapshot(MetricsOptions(source=MetricsSource(prometheus=URL)), WINDOW)
    [finding] = [f for f in metrics_report(snapshot).findings if f.id == "metrics.gpu.pcie_downgraded"]
    node = finding.nodes[0]
    assert "\x1b" not in node and "\n" not in "".join(finding.pods)
    [confirm, *others] = finding.suggested_commands
    # The name only ever appears inside a PromQL string inside one single-quoted shell word.
    assert (
        """'query=DCGM_FI_DEV_PCIE_LINK_WIDTH{Hostname="evil\\"; rm -rf / #[31m",gpu="0"}"""
        in confirm.command
    )
    assert all("rm -rf" not in c.command for c in others)


def test_amp_queries_are_sigv4_signed_for_aps() -> None:
    import boto3

    source = MetricsSource(amp_workspace="ws-12345678-abcd-ef01-2345-6789abcdef01", region="us-west-2")
    base = "https://aps-workspaces.us-west-2.amazonaws.com/workspaces/ws-12345678-abcd-ef01-2345-6789abcdef01"
    with respx.mock:
        route = respx.post(f"{base}/api/v1/query").mock(return_value=_vector([]))
        with source.reader(boto3.session.Session(region_name="us-west-2")) as reader:
            reader.instant("up", WINDOW.end)
        headers = route.calls.last.request.headers
    assert headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=testing/")
    assert "/us-west-2/aps/aws4_request" in headers["authorization"]
    assert "x-amz-date" in headers and "x-amz-security-token" in headers


def test_snapshot_round_trips(tmp_path: Any) -> None:
    with respx.mock:
        _serve(_gpus(1))
        snapshot = metrics_snapshot(MetricsOptions(source=MetricsSource(prometheus=URL)), WINDOW)
    snapshot.save(tmp_path)
    assert Snapshot.load(tmp_path) == snapshot


def test_confirmations_for_amp_are_signed_reads_with_the_window_in_the_url() -> None:
    from hyperpod_nccl.analyze.metrics_common import confirm_command, metrics_view
    from hyperpod_nccl.snapshot.metrics import MetricsSnapshot

    base = "https://aps-workspaces.us-west-2.amazonaws.com/workspaces/ws-1"
    metrics = MetricsSnapshot(
        source="amp ws-1 (us-west-2)",
        query_url=base,
        start=WINDOW.start,
        end=WINDOW.end,
        step_s=30,
        coarse_step_s=150,
    )
    view = metrics_view(Snapshot(collected_at="2026-03-02T12:00:00Z", metrics=metrics))
    assert view is not None
    command = confirm_command(view, 'DCGM_FI_DEV_GPU_UTIL{Hostname="n1"}', "why")
    assert command.command.startswith(
        f"awscurl --service aps --region us-west-2 '{base}/api/v1/query_range?query="
    )
    assert f"start={WINDOW.start}&end={WINDOW.end}&step=30s'" in command.command
    assert command.permission == "aps:QueryMetrics"
