package bench

import (
	"testing"

	"github.com/otelcol-seq/otelcol-seq/internal/event"
)

func TestOrder(t *testing.T) {
	tests := []struct {
		name                 string
		recs                 []Rec
		ticket, time, causal uint64
	}{
		{
			name: "fork exec exit in order",
			recs: []Rec{
				{Ticket: 0, KTime: 10, PID: 5, Start: 1, Type: event.Fork},
				{Ticket: 1, KTime: 11, PID: 5, Start: 1, Type: event.Exec},
				{Ticket: 2, KTime: 12, PID: 5, Start: 1, Type: event.Exit},
			},
		},
		{
			name: "exit before fork, exec after exit",
			recs: []Rec{
				{Ticket: 2, KTime: 12, PID: 5, Start: 1, Type: event.Exit},
				{Ticket: 0, KTime: 10, PID: 5, Start: 1, Type: event.Fork},
				{Ticket: 1, KTime: 11, PID: 5, Start: 1, Type: event.Exec},
			},
			ticket: 1, time: 1, causal: 2,
		},
		{
			name: "a reused pid is another process",
			recs: []Rec{
				{Ticket: 0, KTime: 10, PID: 5, Start: 1, Type: event.Exit},
				{Ticket: 1, KTime: 11, PID: 5, Start: 2, Type: event.Fork},
				{Ticket: 2, KTime: 12, PID: 5, Start: 2, Type: event.Exec},
			},
		},
		{
			name: "a process seen only from its exec is fine",
			recs: []Rec{
				{Ticket: 0, KTime: 10, PID: 7, Start: 3, Type: event.Exec},
				{Ticket: 1, KTime: 9, PID: 7, Start: 3, Type: event.Exit},
			},
			time: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewOrder(true)
			for _, r := range tt.recs {
				o.Observe(r)
			}
			if o.TicketOrder != tt.ticket || o.TimeInversions != tt.time || o.Causality != tt.causal {
				t.Errorf("ticket %d time %d causality %d, want %d %d %d", o.TicketOrder, o.TimeInversions, o.Causality, tt.ticket, tt.time, tt.causal)
			}
		})
	}
}
