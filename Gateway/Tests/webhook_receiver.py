"""An app's webhook endpoint for Gateway/webhooks-e2e.sh: verifies each message with Standard
Webhooks' own Python library (PyPI `standardwebhooks`), as an app would, and writes one JSON line
per message it took.

    WEBHOOK_SECRET=whsec_… python3 webhook_receiver.py PORT LOG REFUSALS

- It answers 503 to the first REFUSALS messages, counted in LOG.refusals so that the count holds
  across restarts of the receiver.
- A message that does not verify is answered 401 and written down with "verified": false.
- A message that verifies is answered 204 and written down as
  {"id": webhook-id, "verified": true, "data": [events]}; the same id may come twice (the gateway
  could not record that it was delivered), which the script's check allows.
"""

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

port, log, refusals = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
webhook = Webhook(os.environ["WEBHOOK_SECRET"])
lock = threading.Lock()


def refuse() -> bool:
    """Whether this message is one of the first REFUSALS (and counts it)."""
    path = log + ".refusals"
    refused = int(open(path).read()) if os.path.exists(path) else 0
    if refused >= refusals:
        return False
    with open(path, "w") as file:
        file.write(str(refused + 1))
    return True


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        with lock:
            if refuse():
                status = 503
            else:
                try:
                    message = webhook.verify(body, dict(self.headers.items()))
                    line = {"id": self.headers["webhook-id"], "verified": True, "data": message["data"]}
                    status = 204
                except WebhookVerificationError as error:
                    line = {"id": self.headers.get("webhook-id"), "verified": False, "error": str(error)}
                    status = 401
                with open(log, "a") as file:
                    file.write(json.dumps(line) + "\n")
        self.send_response(status)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", port), Receiver)
print("listening", flush=True)
server.serve_forever()
