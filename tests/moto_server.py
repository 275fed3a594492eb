"""Runs the moto AWS emulator for the test suite on a free loopback port, one request at a time.

Why not `moto_server`: it serves requests on many threads, and moto's DynamoDB
TransactWriteItems checks its conditions and then applies them without a lock, so two
concurrent transactions can both pass a condition that real DynamoDB (which serialises
transactions) would fail for one of them. Serving one request at a time gives the emulator
the isolation the real service has. Binding port 0 and printing the chosen port avoids
racing another process for a "free" port.

One patch, for memory: moto's TransactWriteItems deep-copies the whole table (with every
stream record it ever kept) once per *item* of the transaction, to roll back on failure. A
100-item transaction on a table a long test has filled copied it 100 times, and the
emulator grew past 10 GB. `_one_copy_per_table` makes it copy each table once per
transaction, which is all the rollback needs; behaviour is otherwise moto's own.

A second patch, for a moto bug: when a table's stream is mapped to a Lambda function, moto
`json.dumps` each write's stream records and fails on a binary attribute (the inline body of a
small file, `body`), which cancels the write itself. AWS hands binary values to Lambda
base64-encoded; `_binary_in_stream_events` makes moto's encoder do the same, and nothing else.

IAM: `tests/iam/moto_plugin.py` is installed, so requests signed with credentials from moto's
STS `AssumeRole` are authorized as AWS documents it (tests/iam/README.md); every other
request (the suite's dummy credentials) is served as before. Decision log: WORKSPACE_IAM_LOG.

Stdout: the first line is the plain-HTTP port. In the default mode the same app (same
in-memory backends) is also served over HTTPS, so `aws:SecureTransport` can be true, with a
fresh self-signed certificate for 127.0.0.1 in $WORKSPACE_MOTO_TLS_DIR (default
target/moto-tls: cert.pem, key.pem); the second line is the HTTPS port. One lock around the
app keeps the two listeners to one request at a time between them.
"""

import copy
import datetime
import functools
import ipaddress
import os
import sys
import threading

from werkzeug.serving import make_server

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)


def _one_copy_per_table() -> None:
    import moto.dynamodb.models as dynamodb_models
    from moto.dynamodb.models.table import Table

    real_deepcopy = copy.deepcopy
    original = dynamodb_models.DynamoDBBackend.transact_write_items

    @functools.wraps(original)
    def transact_write_items(self, transact_items):  # type: ignore[no-untyped-def]
        copies: dict[int, Table] = {}

        def deepcopy(x, memo=None):  # type: ignore[no-untyped-def]
            if isinstance(x, Table):
                if id(x) not in copies:
                    copies[id(x)] = real_deepcopy(x, memo)
                return copies[id(x)]
            return real_deepcopy(x, memo)

        # The models module calls `copy.deepcopy`; give it, for this call only, a `copy`
        # whose deepcopy shares one copy per table. The app runs one request at a time
        # (`_one_at_a_time`), so no other request sees the swap.
        dynamodb_models.copy = type("copy", (), {"deepcopy": staticmethod(deepcopy)})
        try:
            return original(self, transact_items)
        finally:
            dynamodb_models.copy = copy

    dynamodb_models.DynamoDBBackend.transact_write_items = transact_write_items


def _self_signed(folder: str) -> tuple[str, str]:
    """A certificate for 127.0.0.1 and its key, written into `folder` as cert.pem and
    key.pem: a client trusts the emulator over TLS only if told to trust cert.pem."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "moto test")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = os.path.join(folder, "cert.pem"), os.path.join(folder, "key.pem")
    with open(cert_path, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(key_path, "wb") as f:
        f.write(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
    return cert_path, key_path


class _InOrder:
    """A lock granted in the order it was asked for. threading.Lock is not: a request that
    arrived later could overtake one waiting, and the call-budget tests, which measure how
    many round trips a client waits for in sequence, would see two calls the client sent side
    by side served out of turn (a single-threaded listener served them in arrival order)."""

    def __init__(self) -> None:
        self._turns = threading.Condition()
        self._next_ticket = 0
        self._serving = 0

    def __enter__(self) -> None:
        with self._turns:
            ticket = self._next_ticket
            self._next_ticket += 1
            self._turns.wait_for(lambda: self._serving == ticket)

    def __exit__(self, *exc: object) -> None:
        with self._turns:
            self._serving += 1
            self._turns.notify_all()


def _one_at_a_time(app):  # type: ignore[no-untyped-def]
    """The WSGI app behind a lock, its response read inside it: every connection of both
    listeners (HTTP and HTTPS), each on its own thread, still reaches moto one request at a
    time, in the order the requests arrived."""
    lock = _InOrder()

    def serialized(environ, start_response):  # type: ignore[no-untyped-def]
        with lock:
            result = app(environ, start_response)
            try:
                return [b"".join(result)]
            finally:
                if hasattr(result, "close"):
                    result.close()

    return serialized


def _install_iam_plugin() -> None:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "iam"))
    import moto_plugin

    moto_plugin.install()


def _binary_in_stream_events() -> None:
    import base64
    import json
    import types

    import moto.awslambda.models as lambda_models

    def default(o):  # type: ignore[no-untyped-def]
        if isinstance(o, (bytes, bytearray)):
            return base64.b64encode(o).decode("ascii")
        raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")

    def dumps(obj, **kw):  # type: ignore[no-untyped-def]
        return json.dumps(obj, default=default, **kw)

    lambda_models.json = types.SimpleNamespace(
        dumps=dumps, loads=json.loads, JSONDecodeError=json.JSONDecodeError
    )


def main() -> None:
    """`--tls FOLDER`: serve HTTPS only, with a fresh self-signed certificate
    (FOLDER/cert.pem), for the test that the AWS clients speak TLS and check the certificate.
    Default: HTTP (first stdout line) and HTTPS (second line) over the same backends."""
    _one_copy_per_table()
    _binary_in_stream_events()
    _install_iam_plugin()
    app = _one_at_a_time(DomainDispatcherApplication(create_backend_app))

    def serve(ssl_context):  # type: ignore[no-untyped-def]
        # A thread per connection for the TLS handshake and reading the request; the lock
        # above still runs the app one request at a time. A single-threaded listener left
        # every other client's TLS handshake waiting in the backlog while it served one
        # request, and a function's SDK gives up connecting after 3.1 s: the likely cause of
        # the gateway tests' rare "HTTP connect timeout" 500s and Lambda timeouts.
        return make_server(
            "127.0.0.1",
            0,
            app,
            threaded=True,
            request_handler=MotoRequestHandler,
            ssl_context=ssl_context,
        )

    if len(sys.argv) == 3 and sys.argv[1] == "--tls":
        server = serve(_self_signed(sys.argv[2]))
        print(server.server_port, flush=True)
    else:
        server = serve(None)
        tls_dir = os.environ.get("WORKSPACE_MOTO_TLS_DIR", os.path.join("target", "moto-tls"))
        os.makedirs(tls_dir, exist_ok=True)
        tls_server = serve(_self_signed(tls_dir))
        threading.Thread(target=tls_server.serve_forever, daemon=True).start()
        print(server.server_port, flush=True)
        print(tls_server.server_port, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
