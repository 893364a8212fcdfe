// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package h2

import (
	"encoding/hex"
	"strconv"
	"strings"
	"time"
)

// field bits of headerFields.has.
const (
	hasMethod uint16 = 1 << iota
	hasPath
	hasAuthority
	hasContentType
	hasStatus
	hasGRPCStatus
	hasGRPCMessage
	hasGRPCTimeout
	hasTraceParent
)

// headerFields is what a header block says that matters here.
type headerFields struct {
	has                                      uint16
	method, path, authority, contentType     string
	status, grpcStatus, grpcMessage, timeout string
	traceparent                              string
	// The first indexed field not resolved (unk: its entry number before
	// the decoder's start, 0 for any other), and the first after :method
	// (unkAfterMethod): where the :path of a request that predates the
	// capture is (grpc-go and Go's net/http2 write :path right after
	// :method, with only static fields between).
	sawMethod, sawUnk, sawUnkAfterMethod bool
	unk, unkAfterMethod                  uint32
}

// unknown records an indexed field not resolved (hpackDecoder.unknown).
func (f *headerFields) unknown(entry uint32) {
	if !f.sawUnk {
		f.sawUnk, f.unk = true, entry
	}
	if f.sawMethod && !f.sawUnkAfterMethod {
		f.sawUnkAfterMethod, f.unkAfterMethod = true, entry
	}
}

// pathEntry is the number of the entry before the decoder's start that the
// block's :path is taken to be (0: none).
func (f *headerFields) pathEntry() uint32 {
	if f.sawUnkAfterMethod {
		return f.unkAfterMethod
	}
	return f.unk
}

func (f *headerFields) add(name, value string) {
	if name == ":method" {
		f.sawMethod = true
	}
	var bit uint16
	var dst *string
	switch name {
	case ":method":
		bit, dst = hasMethod, &f.method
	case ":path":
		bit, dst = hasPath, &f.path
	case ":authority":
		bit, dst = hasAuthority, &f.authority
	case "content-type":
		bit, dst = hasContentType, &f.contentType
	case ":status":
		bit, dst = hasStatus, &f.status
	case "grpc-status":
		bit, dst = hasGRPCStatus, &f.grpcStatus
	case "grpc-message":
		bit, dst = hasGRPCMessage, &f.grpcMessage
	case "grpc-timeout":
		bit, dst = hasGRPCTimeout, &f.timeout
	case "traceparent":
		bit, dst = hasTraceParent, &f.traceparent
	default:
		return
	}
	if f.has&bit == 0 { // the first of a repeated field counts
		f.has |= bit
		*dst = value
	}
}

// SplitPath splits a gRPC path "/pkg.Service/Method" into its service and
// method; ok is false for any other form.
func SplitPath(p string) (service, method string, ok bool) {
	if len(p) < 4 || p[0] != '/' {
		return "", "", false
	}
	i := strings.IndexByte(p[1:], '/')
	if i <= 0 {
		return "", "", false
	}
	service, method = p[1:1+i], p[2+i:]
	if method == "" || strings.IndexByte(method, '/') >= 0 {
		return "", "", false
	}
	return service, method, true
}

// ParseGRPCTimeout parses a grpc-timeout value (1 to 8 digits and a unit
// of H, M, S, m, u, n).
func ParseGRPCTimeout(s string) (time.Duration, bool) {
	if len(s) < 2 || len(s) > 9 {
		return 0, false
	}
	var unit time.Duration
	switch s[len(s)-1] {
	case 'H':
		unit = time.Hour
	case 'M':
		unit = time.Minute
	case 'S':
		unit = time.Second
	case 'm':
		unit = time.Millisecond
	case 'u':
		unit = time.Microsecond
	case 'n':
		unit = time.Nanosecond
	default:
		return 0, false
	}
	v, err := strconv.ParseUint(s[:len(s)-1], 10, 64)
	if err != nil || s[0] == '+' {
		return 0, false
	}
	if d := time.Duration(v); d <= (1<<63-1)/unit {
		return d * unit, true
	}
	return 1<<63 - 1, true
}

// ParseTraceParent parses a W3C traceparent header. Version ff, all-zero
// ids and malformed values are invalid; a future version may carry more
// fields after a '-'.
func ParseTraceParent(s string) TraceParent {
	var tp TraceParent
	if len(s) < 55 || s[2] != '-' || s[35] != '-' || s[52] != '-' {
		return tp
	}
	if len(s) > 55 && (s[:2] == "00" || s[55] != '-') {
		return tp
	}
	var ver [1]byte
	if !unhex(ver[:], s[:2]) || ver[0] == 0xff ||
		!unhex(tp.TraceID[:], s[3:35]) || !unhex(tp.ParentID[:], s[36:52]) {
		return tp
	}
	var fl [1]byte
	if !unhex(fl[:], s[53:55]) || tp.TraceID.IsEmpty() || tp.ParentID.IsEmpty() {
		return TraceParent{}
	}
	tp.Flags = fl[0]
	tp.Valid = true
	return tp
}

// unhex decodes lowercase hex s into dst (len(s) == 2*len(dst)).
func unhex(dst []byte, s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	_, err := hex.Decode(dst, []byte(s))
	return err == nil
}

// DecodeGRPCMessage undoes the percent-encoding of a grpc-message value; a
// malformed escape is kept as it is.
func DecodeGRPCMessage(s string) string {
	if strings.IndexByte(s, '%') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			var v [1]byte
			if _, err := hex.Decode(v[:], []byte(s[i+1:i+3])); err == nil {
				b.WriteByte(v[0])
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// gRPC status codes used here.
const (
	codeCancelled         = 1
	codeUnknown           = 2
	codeDeadlineExceeded  = 4
	codePermissionDenied  = 7
	codeResourceExhausted = 8
	codeInternal          = 13
	codeUnavailable       = 14
)

// HTTP/2 error codes used here.
const (
	errRefusedStream      = 0x7
	errCancel             = 0x8
	errEnhanceYourCalm    = 0xb
	errInadequateSecurity = 0xc
)

// resetStatus maps an RST_STREAM error code to the gRPC status a client
// reports (gRPC's PROTOCOL-HTTP2 "Errors" table).
func resetStatus(code uint32) int {
	switch code {
	case errRefusedStream:
		return codeUnavailable
	case errCancel:
		return codeCancelled
	case errEnhanceYourCalm:
		return codeResourceExhausted
	case errInadequateSecurity:
		return codePermissionDenied
	}
	return codeInternal
}
