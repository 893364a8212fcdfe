package bench

import (
	"time"

	"github.com/otelcol-seq/otelcol-seq/internal/reorder"
)

// Rec is the part of a delivered event that the order checks look at.
type Rec struct {
	Ticket uint64
	KTime  uint64 // when it happened (CLOCK_BOOTTIME ns)
	Start  uint64 // the process's start time: with PID it names the process
	PID    uint32
	Type   uint16
}

// TicketSpan: the bench's ring buffer and perf records take one ticket each.
func (r Rec) TicketSpan() (first, n uint64) { return r.Ticket, 1 }

// Reorder is the bounded reordering stage (package reorder), over Recs: late
// records are released at once, out of order, and counted in Late.
type Reorder = reorder.Reorder[Rec]

// NewReorder returns a stage that expects ticket first next.
func NewReorder(first uint64, maxHeld int, maxWait time.Duration) *Reorder {
	return reorder.New[Rec](first, maxHeld, maxWait)
}
