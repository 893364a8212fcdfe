#!/usr/bin/env bash
# Copyright The otelcol-seq Authors
# SPDX-License-Identifier: Apache-2.0
#
# A Python virtual environment with grpcio (PyPI), for the grpc receiver's
# tests against a second gRPC implementation (C-core: sendmsg/recvmsg with
# iovecs), and h2 (PyPI, pure Python HTTP/2) for its TLS test through
# Python's ssl module (OpenSSL's SSL_write_ex/SSL_read_ex). Kept outside the
# clone, built once (h2 added to a venv that lacks it); prints the venv's
# python.
#   PYGRPC_CACHE  where (default ~/.cache/otelcol-seq/python)
set -euo pipefail
GRPCIO_VERSION=1.85.1
H2_VERSION=4.4.1
dir=${PYGRPC_CACHE:-$HOME/.cache/otelcol-seq/python}
py=$dir/bin/python
if [ -x "$py" ] && "$py" -c "import grpc, sys; sys.exit(grpc.__version__ != '$GRPCIO_VERSION')" 2>/dev/null; then
	if ! "$py" -c "import h2, sys; sys.exit(h2.__version__ != '$H2_VERSION')" 2>/dev/null; then
		"$dir/bin/pip" install -q --disable-pip-version-check "h2==$H2_VERSION" >&2
	fi
	echo "$py"
	exit 0
fi
if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
	echo "installing: python3-venv" >&2
	apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >&2
fi
rm -rf "$dir"
python3 -m venv "$dir" >&2
"$dir/bin/pip" install -q --disable-pip-version-check "grpcio==$GRPCIO_VERSION" "h2==$H2_VERSION" >&2
echo "$py"
