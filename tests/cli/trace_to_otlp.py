#!/usr/bin/env python3
"""Writes the calls of a rehearse trace (service_call / service_reply pairs)
as an OTLP/JSON trace export, in the shape an OpenTelemetry HTTP client
instrumentation and the Collector's file exporter give: one resource per
job, client spans with the stable HTTP semantic conventions, 64-bit
integers as decimal strings. Services are named by `server.address`
("<service>.internal") unless listed in --peer-service, which get
`peer.service` instead. Used by tests/cli/test_cli_import.sh.

usage: trace_to_otlp.py TRACE.jsonl OUT.json [--peer-service NAME]... [--jsonl]
"""
import datetime
import hashlib
import json
import sys


def nanos(instant):
    t = datetime.datetime.strptime(instant.replace("Z", "+0000"),
                                   "%Y-%m-%dT%H:%M:%S.%f%z" if "." in instant else "%Y-%m-%dT%H:%M:%S%z")
    return str(int(t.timestamp() * 1000) * 1_000_000)


def attr(key, value):
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


def span_of(call, reply, peer_services):
    service = call["service"]
    attrs = [attr("http.request.method", call.get("operation", "GET"))]
    if service in peer_services:
        attrs.append(attr("peer.service", service))
    else:
        attrs.append(attr("server.address", service + ".internal"))
    attrs.append(attr("url.full", "https://%s.internal%s" % (service, call.get("target", "/"))))
    status = {}
    if "status" in reply:
        attrs.append(attr("http.response.status_code", reply["status"]))
        if reply["status"] >= 400:
            status = {"code": 2}
    else:
        error = reply.get("transport_error", "timeout")
        attrs.append(attr("error.type", {"timeout": "timeout", "connection_refused": "ECONNREFUSED",
                                          "connection_reset": "ECONNRESET", "dns": "ENOTFOUND",
                                          "broken_pipe": "EPIPE"}.get(error, error)))
        status = {"code": 2, "message": reply.get("message", error)}
    digest = hashlib.sha256(call["request_id"].encode()).hexdigest()
    return {"traceId": digest[:32], "spanId": digest[32:48], "name": call.get("operation", "GET"),
            "kind": 3, "startTimeUnixNano": nanos(call["t"]), "endTimeUnixNano": nanos(reply["t"]),
            "attributes": attrs, "status": status}


def main():
    args = sys.argv[1:]
    peer = {args[i + 1] for i, a in enumerate(args) if a == "--peer-service"}
    trace, out = args[0], args[1]
    calls, by_job = {}, {}
    for line in open(trace):
        e = json.loads(line)
        if e.get("type") == "service_call":
            calls[e["request_id"]] = e
        elif e.get("type") == "service_reply" and e.get("request_id") in calls:
            call = calls.pop(e["request_id"])
            by_job.setdefault(call.get("job", "worker"), []).append(span_of(call, e, peer))
    resources = [{"resource": {"attributes": [attr("service.name", job)]},
                  "scopeSpans": [{"scope": {"name": "@opentelemetry/instrumentation-undici",
                                            "version": "0.5.0"}, "spans": spans}]}
                 for job, spans in sorted(by_job.items())]
    with open(out, "w") as f:
        if "--jsonl" in args:
            for r in resources:
                f.write(json.dumps({"resourceSpans": [r]}) + "\n")
        else:
            json.dump({"resourceSpans": resources}, f, indent=1)


main()
