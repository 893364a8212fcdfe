# Copyright The otelcol-seq Authors
# SPDX-License-Identifier: Apache-2.0
"""grpcio (C-core) as the other end of grpc-go, for the grpc receiver's tests.

Raw bytes, no generated stubs: a generic handler serves
/grpc.testing.TestService/UnaryCall, and the client sends serialized
grpc.testing.SimpleRequest messages written by hand.

  py_grpc.py server            serve on 127.0.0.1 (a free port), print it, run until stdin closes
  py_grpc.py client ADDR N     N UnaryCall calls (8 threads), then one that asks for NOT_FOUND
"""
import sys
import threading
from concurrent import futures

import grpc

METHOD = "/grpc.testing.TestService/UnaryCall"
# SimpleRequest{response_status: EchoStatus{code: 5, message: "notfound"}}
NOT_FOUND_REQ = b"\x3a\x0c\x08\x05\x12\x08notfound"


def unary(req, ctx):
    # The grpc-go client asks for an error the same way (the message is in the request).
    if b"notfound" in req:
        ctx.abort(grpc.StatusCode.NOT_FOUND, "notfound")
    return b""  # an empty SimpleResponse


def server():
    srv = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    handler = grpc.method_handlers_generic_handler(
        "grpc.testing.TestService",
        {"UnaryCall": grpc.unary_unary_rpc_method_handler(unary)},
    )
    srv.add_generic_rpc_handlers((handler,))
    port = srv.add_insecure_port("127.0.0.1:0")
    srv.start()
    print(port, flush=True)
    sys.stdin.read()
    srv.stop(0).wait()


def client(addr, n):
    with grpc.insecure_channel(addr) as ch:
        call = ch.unary_unary(METHOD)
        call(b"", timeout=30)  # connect, and one call before the threads

        def work(k):
            for _ in range(k):
                call(b"", timeout=30)

        threads = [threading.Thread(target=work, args=((n - 1) // 8 + (1 if i < (n - 1) % 8 else 0),)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        try:
            call(NOT_FOUND_REQ, timeout=30)
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.NOT_FOUND:
                raise
        else:
            raise SystemExit("NOT_FOUND call succeeded")


if __name__ == "__main__":
    if sys.argv[1] == "server":
        server()
    else:
        client(sys.argv[2], int(sys.argv[3]))
