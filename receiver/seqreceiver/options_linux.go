// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package seqreceiver

import "github.com/otelcol-seq/otelcol-seq/internal/event"

// shedEvents maps pressure::shed to event types.
func (r *seqReceiver) shedEvents() []event.Type {
	var evs []event.Type
	for _, e := range r.cfg.Pressure.Shed {
		switch e {
		case EventFork:
			evs = append(evs, event.Fork)
		case EventExec:
			evs = append(evs, event.Exec)
		case "thread":
			evs = append(evs, event.ThreadStart, event.ThreadExit)
		}
	}
	return evs
}

func (r *seqReceiver) bpfEvents() []event.Type {
	var evs []event.Type
	for _, e := range r.cfg.Events {
		switch e {
		case EventFork:
			evs = append(evs, event.Fork)
		case EventExec:
			evs = append(evs, event.Exec)
		case EventExit:
			evs = append(evs, event.Exit)
		}
	}
	if r.cfg.ThreadEvents {
		evs = append(evs, event.ThreadStart, event.ThreadExit)
	}
	return evs
}
