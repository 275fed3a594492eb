"""Runs the moto AWS emulator for the test suite on a free loopback port, one request at a time.

Why not `moto_server`: it serves requests on many threads, and moto's DynamoDB
TransactWriteItems checks its conditions and then applies them without a lock, so two
concurrent transactions can both pass a condition that real DynamoDB (which serialises
transactions) would fail for one of them. Serving one request at a time gives the emulator
the isolation the real service has. Binding port 0 and printing the chosen port avoids
racing another process for a "free" port.
"""

import sys

from werkzeug.serving import make_server

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)


def main() -> None:
    app = DomainDispatcherApplication(create_backend_app)
    server = make_server("127.0.0.1", 0, app, threaded=False, request_handler=MotoRequestHandler)
    print(server.server_port, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
