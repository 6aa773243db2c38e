#!/usr/bin/env python3
"""An OTLP/HTTP trace receiver for the tests (docs/reports.md, "OpenTelemetry"): it decodes what it
gets with PyPI's `opentelemetry-proto`, the protobuf definitions every collector is built from.

    otlp_receiver.py serve DIR   listen on 127.0.0.1 (a free port, written to DIR/port), take one
                                 POST, answer 200 when it decodes (400 otherwise), write
                                 DIR/received.json and exit (after 120 s without a POST: exit 3)
    otlp_receiver.py file PATH OUT
                                 decode the OTLP/JSON file PATH, write OUT the same way

OTLP/JSON is the protobuf JSON mapping of ExportTraceServiceRequest but for the ids: trace and
span ids are hex, not base64. They are turned into base64 here and the text is parsed strictly
(`json_format.Parse`, unknown fields refused); ids of the wrong size are refused too. What is
written: {"path", "content_type", "headers", "spans": [{trace_id, span_id, parent_span_id,
name, start_unix_nano, end_unix_nano, attributes, events}]}, or {"error": "..."}.
"""
import base64
import http.server
import json
import os
import sys

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1 import common_pb2

ID_FIELDS = {"traceId": 16, "spanId": 8, "parentSpanId": 8}


def hex_ids_to_base64(node):
    if isinstance(node, dict):
        for key, value in list(node.items()):
            if key in ID_FIELDS and isinstance(value, str) and value != "":
                raw = bytes.fromhex(value)
                if len(raw) != ID_FIELDS[key]:
                    raise ValueError(f"{key} {value!r} is {len(raw)} bytes, not {ID_FIELDS[key]}")
                node[key] = base64.b64encode(raw).decode()
            else:
                hex_ids_to_base64(value)
    elif isinstance(node, list):
        for item in node:
            hex_ids_to_base64(item)


def any_value(value: common_pb2.AnyValue):
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


def decode(body: bytes):
    document = json.loads(body)
    hex_ids_to_base64(document)
    request = trace_service_pb2.ExportTraceServiceRequest()
    json_format.Parse(json.dumps(document), request, ignore_unknown_fields=False)
    spans = []
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                if len(span.trace_id) != 16 or len(span.span_id) != 8:
                    raise ValueError(f"span {span.name!r} has no valid ids")
                spans.append({
                    "trace_id": span.trace_id.hex(),
                    "span_id": span.span_id.hex(),
                    "parent_span_id": span.parent_span_id.hex() or None,
                    "name": span.name,
                    "start_unix_nano": span.start_time_unix_nano,
                    "end_unix_nano": span.end_time_unix_nano,
                    "status_code": span.status.code,
                    "attributes": {a.key: any_value(a.value) for a in span.attributes},
                    "events": [e.name for e in span.events],
                })
    return spans


def write(path, result):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f)
    os.replace(tmp, path)


def serve(directory):
    out = os.path.join(directory, "received.json")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            result = {
                "path": self.path,
                "content_type": self.headers.get("Content-Type", ""),
                "headers": {k.lower(): v for k, v in self.headers.items()},
            }
            try:
                result["spans"] = decode(body)
                status = 200
            except Exception as err:  # said to the sender and to the test
                result["error"] = f"{type(err).__name__}: {err}"
                status = 400
            answer = b"{}" if status == 200 else json.dumps({"message": result["error"]}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)
            write(out, result)
            self.server.done = True

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    server.done = False
    server.timeout = 120
    write(os.path.join(directory, "port"), server.server_address[1])
    while not server.done:
        server.handle_request()
        if not server.done:
            sys.exit(3)


def main():
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
    elif sys.argv[1] == "file":
        with open(sys.argv[2], "rb") as f:
            body = f.read()
        try:
            result = {"path": sys.argv[2], "content_type": "", "headers": {}, "spans": decode(body)}
        except Exception as err:
            result = {"error": f"{type(err).__name__}: {err}"}
        write(sys.argv[3], result)
        sys.exit(0 if "spans" in result else 1)


main()
