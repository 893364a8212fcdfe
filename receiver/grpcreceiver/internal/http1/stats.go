// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package http1

// LostReason says why a direction lost its sync.
type LostReason uint8

const (
	// LostHole: a hole in a head, a chunk-size line, past the end of a body
	// or between messages.
	LostHole LostReason = iota
	// LostBadStart: a start line that is not HTTP/1.0 or 1.1 (a method
	// token too long or invalid, a bad target or version, a bad status
	// line).
	LostBadStart
	// LostBadField: a header field line without a name.
	LostBadField
	// LostHeadTooLarge: a head or trailers beyond MaxHeaderBytes.
	LostHeadTooLarge
	// LostBadChunk: a chunk-size line not hex, too long, or chunk data not
	// followed by CRLF.
	LostBadChunk
	// LostBadFraming: Content-Lengths that differ, or a request whose
	// Transfer-Encoding does not end in chunked.
	LostBadFraming
	numLostReasons
)

var lostNames = [numLostReasons]string{"hole", "bad_start", "bad_field", "head_too_large", "bad_chunk", "bad_framing"}

func (r LostReason) String() string {
	if r < numLostReasons {
		return lostNames[r]
	}
	return "unknown"
}

// Stats are the Tracker's counters since NewTracker.
type Stats struct {
	ConnsTracked       uint64 // connections tracked (opened or first seen)
	ConnsLive          uint64 // tracked now (a gauge)
	ConnsWithoutOpen   uint64 // first seen by a chunk (ConnOpen lost or predating)
	ConnsEvicted       uint64 // idle (Expire)
	ConnsEvictedLimit  uint64 // the least recently active, for a new one at MaxConns
	ConnsEvictedBudget uint64 // the least recently active, over MemoryBudget
	// ConnsPromoted: connections off probation (their first complete
	// request head); ProbationEvictedLimit and ProbationEvictedBudget:
	// connections on probation evicted for a new one at
	// MaxProbationConns, and over MemoryBudget (before any other).
	ConnsPromoted          uint64
	ProbationEvictedLimit  uint64
	ProbationEvictedBudget uint64
	// ConnsTunnelled: connections whose HTTP parsing ended (101 Switching
	// Protocols, a 2xx to CONNECT); BytesTunnelled: their bytes since,
	// ignored.
	ConnsTunnelled uint64
	BytesTunnelled uint64
	SyncLost       [numLostReasons]uint64 // directions that lost their sync, by reason
	Resyncs        uint64                 // directions (re)synchronised at a call's start line
	// ChunkedSeeks: chunked bodies whose framing fell in a hole;
	// ChunkedEndsFound: of them, those whose last chunk was found after it
	// (the others lose the sync).
	ChunkedSeeks     uint64
	ChunkedEndsFound uint64
	ChunksStale      uint64 // chunks wholly before the direction's position (re-sent, late)
	ChunksUnsynced   uint64 // chunks skipped while waiting for a start line
	ChunksIgnored    uint64 // chunks of tunnels or of no direction
	BytesParsed      uint64 // captured bytes parsed in order
	BytesHoles       uint64 // bytes skipped in holes inside bodies
	RequestHeads     uint64
	ResponseHeads    uint64 // interim ones included
	// InterimResponses: 1xx responses but 101, passed over.
	InterimResponses uint64
	// RequestsOverLimit: requests beyond MaxPipelined, not tracked (their
	// responses skipped).
	RequestsOverLimit uint64
	// ResponsesUnmatched: responses not paired (to requests not tracked,
	// lost in a hole, or captured before their requests).
	ResponsesUnmatched uint64
	FieldsCut          uint64 // strings cut to MaxFieldBytes
	FoldedLines        uint64 // obs-fold continuation lines (ignored)
	CallsEmitted       uint64
	CallsConnClosed    uint64 // emitted unanswered (or answered in part) at ConnClose
	CallsEvicted       uint64 // emitted unanswered at eviction or expiry
	CallsGap           uint64 // emitted with FlagGap
	MemoryUsed         uint64 // accounted memory now (a gauge; Tracker.MemoryUsed)
	Lost               uint64 // records reported lost
}

// SyncLostTotal sums SyncLost.
func (s Stats) SyncLostTotal() uint64 {
	var n uint64
	for _, v := range s.SyncLost {
		n += v
	}
	return n
}
