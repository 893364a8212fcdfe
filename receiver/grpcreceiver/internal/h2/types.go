// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Package h2 is the HTTP/2 tracker (branch grpc-h2); until it is merged,
// only the capture's input types are here.
package h2

import (
	"net/netip"
)

// Dir is the direction of a connection's bytes, seen from the observed
// process.
type Dir uint8

const (
	// Egress is the bytes the observed process wrote.
	Egress Dir = 0
	// Ingress is the bytes the observed process read.
	Ingress Dir = 1
)

// Role says how the observed socket was set up.
type Role uint8

const (
	// RoleUnknown: the connection predates the capture (offsets arbitrary).
	RoleUnknown Role = iota
	// RoleClient: the observed process called connect.
	RoleClient
	// RoleServer: the observed process accepted the connection.
	RoleServer
)

// ConnID is the kernel's identity of a socket: unique among live
// connections, possibly reused after ConnClose.
type ConnID uint64

// Endpoint is one end of a TCP connection.
type Endpoint struct {
	Addr netip.Addr
	Port uint16
}

// Proc is the thread that made a syscall.
type Proc struct {
	PID, TID uint32
	StartNs  uint64 // process start, boot-clock ns (task->group_leader->start_boottime)
}

// ConnOpen announces a connection.
type ConnOpen struct {
	Conn          ConnID
	TimeNs        uint64
	Proc          Proc
	Local, Remote Endpoint
	Role          Role
}

// Chunk is captured bytes of one direction of a connection: bytes
// [Offset, Offset+len(Data)) of that direction's TCP byte stream. Offset 0 is
// the first byte of the connection in that direction when the Role is not
// RoleUnknown; for RoleUnknown offsets are arbitrary but consistent. Data is
// valid during the call only.
type Chunk struct {
	Conn   ConnID
	Dir    Dir
	Offset uint64
	Data   []byte
	TimeNs uint64
	Proc   Proc
}

// ConnClose ends a connection.
type ConnClose struct {
	Conn   ConnID
	TimeNs uint64
	Total  [2]uint64 // bytes per Dir when known, 0 = unknown
}

// Lost reports capture records lost (a ring gap); which connection is unknown.
type Lost struct {
	Count uint64
}
