# Copyright The otelcol-seq Authors
# SPDX-License-Identifier: Apache-2.0
"""gRPC calls over TLS from Python's ssl module, for the grpc receiver's tests.

Python's ssl module writes and reads through OpenSSL's SSL_write_ex and
SSL_read_ex (Python 3.10+); the HTTP/2 framing is the h2 package's (PyPI,
pure Python), the messages are written by hand (no stubs).

  py_h2_tls.py ADDR N   N UnaryCall calls on one connection, one at a time,
                        then one that asks for NOT_FOUND; prints the
                        grpc-status of each, space-separated
"""
import socket
import ssl
import sys

import h2.config
import h2.connection
import h2.events

METHOD = "/grpc.testing.TestService/UnaryCall"
# A gRPC message (5-byte prefix) holding an empty SimpleRequest.
EMPTY_REQ = b"\x00\x00\x00\x00\x00"
# SimpleRequest{response_status: EchoStatus{code: 5, message: "notfound"}}
NOT_FOUND = b"\x3a\x0c\x08\x05\x12\x08notfound"
NOT_FOUND_REQ = b"\x00" + len(NOT_FOUND).to_bytes(4, "big") + NOT_FOUND


def call(sock, conn, addr, body):
    sid = conn.get_next_available_stream_id()
    conn.send_headers(sid, [
        (":method", "POST"), (":scheme", "https"), (":path", METHOD), (":authority", addr),
        ("content-type", "application/grpc"), ("te", "trailers"),
    ])
    conn.send_data(sid, body, end_stream=True)
    sock.sendall(conn.data_to_send())
    status = None
    while True:
        data = sock.recv(65536)
        if not data:
            raise SystemExit("the server closed the connection")
        ended = False
        for ev in conn.receive_data(data):
            if isinstance(ev, h2.events.DataReceived):
                conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, (h2.events.ResponseReceived, h2.events.TrailersReceived)) and ev.stream_id == sid:
                status = dict(ev.headers).get("grpc-status", status)
            elif isinstance(ev, h2.events.StreamEnded) and ev.stream_id == sid:
                ended = True
        out = conn.data_to_send()
        if out:
            sock.sendall(out)
        if ended:
            return status


def main(addr, n):
    host, port = addr.rsplit(":", 1)
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # the test server's certificate is self-signed
    ctx.set_alpn_protocols(["h2"])
    with socket.create_connection((host, int(port))) as raw, ctx.wrap_socket(raw, server_hostname=host) as sock:
        if sock.selected_alpn_protocol() != "h2":
            raise SystemExit("the server did not choose h2: %r" % sock.selected_alpn_protocol())
        conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        conn.initiate_connection()
        sock.sendall(conn.data_to_send())
        statuses = [call(sock, conn, addr, EMPTY_REQ) for _ in range(n)]
        statuses.append(call(sock, conn, addr, NOT_FOUND_REQ))
        conn.close_connection()
        sock.sendall(conn.data_to_send())
    print(" ".join(str(s) for s in statuses))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
