// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package grpcreceiver

import "net/netip"

func netipParse(addr string) (uint16, error) {
	ap, err := netip.ParseAddrPort(addr)
	return ap.Port(), err
}
