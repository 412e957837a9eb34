"""A W3C traceparent or an X-Ray header as the message's AWSTraceHeader system attribute."""

from __future__ import annotations

from typing import Any

from tiered_jobs.contract import trace_header as traces

from .. import codes
from ..case import Case, case


def trace_headers() -> list[Case]:
    trace_id, span_id = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    inputs: list[tuple[str, str, str | None]] = [
        ("none", "no header: no AWSTraceHeader", None),
        ("traceparent-sampled", "a W3C traceparent, sampled", f"00-{trace_id}-{span_id}-01"),
        ("traceparent-unsampled", "flags 00: Sampled=0", f"00-{trace_id}-{span_id}-00"),
        ("traceparent-flags", "only the sampled bit of the flags counts", f"00-{trace_id}-{span_id}-03"),
        ("traceparent-spaces", "surrounding spaces are dropped", f"  00-{trace_id}-{span_id}-01 "),
        ("traceparent-upper-case", "upper-case hex is not a traceparent", f"00-{trace_id.upper()}-{span_id}-01"),
        ("traceparent-extra", "a fifth field is not a traceparent", f"00-{trace_id}-{span_id}-01-xx"),
        (
            "xray",
            "an X-Ray header is sent as it is",
            "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
        ),
        (
            "xray-lineage",
            "more key=value parts are kept",
            "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1;Lineage=a87bd80c:0",
        ),
        ("xray-spaces", "spaces around parts are dropped", " Root=1-5759e988-bd862e3fe1be46a994272793 ; Sampled=0 "),
        ("xray-bad-root", "a Root that is not 1-<8 hex>-<24 hex>", "Root=1-xyz;Parent=53995c3f42cd8ad8;Sampled=1"),
        ("xray-no-root", "no Root", "Parent=53995c3f42cd8ad8;Sampled=1"),
        ("empty", "an empty header given", ""),
    ]
    return [case(name, text, {"trace_header": header}, _trace(header)) for name, text, header in inputs]


def _trace(header: str | None) -> dict[str, Any]:
    if header is None:
        return {"AWSTraceHeader": None}
    try:
        return {"AWSTraceHeader": traces.normalise(header)}
    except traces.TraceHeaderError as exc:
        return {"problems": codes.job_problems([f"job: {exc}"])}
