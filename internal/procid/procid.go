// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package procid

import (
	"crypto/sha256"
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// IDs computes process ids for one boot. Build it once with New: its methods
// allocate nothing. The zero IDs is the boot id "".
type IDs struct {
	spanPrefix  []byte // "seq.span\x00" + boot id + "\x00"
	tracePrefix []byte // "seq.trace\x00" + boot id + "\x00"
}

// New returns the id function of the boot bootID (the text of
// /proc/sys/kernel/random/boot_id, without the newline).
func New(bootID string) IDs {
	return IDs{
		spanPrefix:  []byte("seq.span\x00" + bootID + "\x00"),
		tracePrefix: []byte("seq.trace\x00" + bootID + "\x00"),
	}
}

// SpanID returns the span id of the process (pid, startNs): the first 8
// bytes of sha256("seq.span\x00" + bootID + "\x00" + pid + "\x00" + startNs),
// numbers in decimal; an all-zero result is made non-zero.
func (p IDs) SpanID(pid uint32, startNs uint64) pcommon.SpanID {
	h := hashID(p.spanPrefix, "seq.span\x00\x00", pid, startNs)
	id := pcommon.SpanID(h[:8])
	if id.IsEmpty() {
		id[7] = 1
	}
	return id
}

// TraceID returns the trace id of the traces whose root is the process
// (pid, startNs): the first 16 bytes of sha256("seq.trace\x00" + bootID +
// "\x00" + pid + "\x00" + startNs); an all-zero result is made non-zero.
func (p IDs) TraceID(pid uint32, startNs uint64) pcommon.TraceID {
	h := hashID(p.tracePrefix, "seq.trace\x00\x00", pid, startNs)
	id := pcommon.TraceID(h[:16])
	if id.IsEmpty() {
		id[15] = 1
	}
	return id
}

// SpanID is New(bootID).SpanID(pid, startNs).
func SpanID(bootID string, pid uint32, startNs uint64) pcommon.SpanID {
	return New(bootID).SpanID(pid, startNs)
}

// TraceID is New(bootID).TraceID(pid, startNs).
func TraceID(bootID string, pid uint32, startNs uint64) pcommon.TraceID {
	return New(bootID).TraceID(pid, startNs)
}

// hashID hashes prefix + pid + "\x00" + start. A zero IDs (nil prefix) uses
// zero, the prefix of the boot id "".
func hashID(prefix []byte, zero string, pid uint32, start uint64) [sha256.Size]byte {
	var buf [160]byte
	b := buf[:0]
	if prefix == nil {
		b = append(b, zero...)
	} else {
		b = append(b, prefix...)
	}
	b = strconv.AppendUint(b, uint64(pid), 10)
	b = append(b, 0)
	b = strconv.AppendUint(b, start, 10)
	return sha256.Sum256(b)
}
