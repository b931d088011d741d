"""An OTLP/HTTP collector stand-in for Gateway/run-with-mock.sh --traces: takes POST /v1/traces
with OTLP/JSON bodies and appends each body, one per line, to LOG.

    python3 otlp_collector.py PORT LOG
"""

import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

port, log = int(sys.argv[1]), sys.argv[2]


class Collector(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        if self.path == "/v1/traces":
            with open(log, "ab") as file:
                file.write(body.replace(b"\n", b" ") + b"\n")
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, format, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", port), Collector).serve_forever()
