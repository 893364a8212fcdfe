package bench

import "github.com/otelcol-seq/otelcol-seq/internal/event"

// Rec is the part of a delivered event that the order checks look at.
type Rec struct {
	Ticket uint64
	KTime  uint64 // when it happened (CLOCK_BOOTTIME ns)
	Start  uint64 // the process's start time: with PID it names the process
	PID    uint32
	Type   event.Type
}

// recOf is ev's Rec.
func recOf(ev *event.Event) Rec {
	return Rec{Ticket: ev.Ticket, KTime: ev.KTime, Start: ev.StartNs, PID: ev.PID, Type: ev.Type}
}

// Order checks one delivery order: tickets going backwards, timestamps going
// backwards, and causality broken within one process (named by pid and start
// time, so a reused pid is another process).
type Order struct {
	Records         uint64
	TicketOrder     uint64 // a record whose ticket is below the previous record's
	TimeInversions  uint64 // a record whose ktime is below the previous record's
	Causality       uint64 // an exec or exit before its process's fork; an exit before its exec
	lastTicket      uint64
	lastKTime       uint64
	have            bool
	procs           map[procKey]uint8
	trackProcesses  bool
	untrackedEvents uint64
}

type procKey struct {
	pid   uint32
	start uint64
}

const (
	sawFork uint8 = 1 << iota
	sawExec
	sawExit
)

// NewOrder returns a checker; with processes it also checks causality
// (a map entry per process seen).
func NewOrder(processes bool) *Order {
	o := &Order{trackProcesses: processes}
	if processes {
		o.procs = make(map[procKey]uint8)
	}
	return o
}

// Observe takes the next record in delivery order.
func (o *Order) Observe(r Rec) {
	o.Records++
	if o.have {
		if r.Ticket < o.lastTicket {
			o.TicketOrder++
		}
		if r.KTime < o.lastKTime {
			o.TimeInversions++
		}
	}
	o.have = true
	o.lastTicket, o.lastKTime = r.Ticket, r.KTime
	if !o.trackProcesses {
		return
	}
	var bit uint8
	switch r.Type {
	case event.Fork:
		bit = sawFork
	case event.Exec:
		bit = sawExec
	case event.Exit:
		bit = sawExit
	default:
		o.untrackedEvents++
		return
	}
	k := procKey{r.PID, r.Start}
	s := o.procs[k]
	switch bit {
	case sawFork:
		// The child's exec or exit came first.
		if s&(sawExec|sawExit) != 0 {
			o.Causality++
		}
	case sawExec:
		// Its exit came first.
		if s&sawExit != 0 {
			o.Causality++
		}
	}
	o.procs[k] = s | bit
}

// Processes is how many processes the checker has seen.
func (o *Order) Processes() int { return len(o.procs) }
