// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package seqreceiver

import (
	"github.com/otelcol-seq/otelcol-seq/internal/event"
	"github.com/otelcol-seq/otelcol-seq/internal/redact"
	"github.com/otelcol-seq/otelcol-seq/internal/sequencer"
	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/pdatamap"
	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/process"
)

// settings are what the configuration sets in the parts the receiver
// drives, built from it here alone (TestSettingsFromConfig sets every field
// and checks it arrives). The receiver's own fields (max_batch,
// traces::service_name, ring_slots for the gauges) it reads from the Config.
type settings struct {
	seq    sequencer.Options
	model  process.Config  // BootID, BootOffset and Cgroups are filled at Start
	mapper pdatamap.Mapper // BootOffset and Cgroups are filled at Start
	// redact replaces the secrets of every exec's and snapshot process's
	// argv once, before the model and the mapper read it (process.Redact);
	// nil when redaction is off.
	redact *redact.Redactor
	// snapshotArgs bounds the bytes of /proc/PID/cmdline read per process
	// running at start (max_args_bytes, as the kernel's cut at an exec).
	snapshotArgs int
	// nice is what the collector's threads are set to at Start (0: left).
	nice int
}

func (c *Config) settings() (settings, error) {
	red, err := c.Redaction.redactor()
	if err != nil {
		return settings{}, err
	}
	return settings{
		seq: sequencer.Options{
			Transport: c.Transport, RingSlots: c.RingSlots, Events: c.bpfEvents(), MaxArgs: c.MaxArgsBytes,
			Shed: c.shedEvents(), ShedAbove: uint64(c.Pressure.Above * float64(c.RingSlots)),
		},
		model: process.Config{
			MaxProcesses:      c.Traces.MaxProcesses,
			RootParents:       c.Traces.RootParents,
			SessionLeaders:    c.Traces.SessionLeaders,
			ThreadEvents:      c.ThreadEvents,
			MaxMemory:         c.Traces.MaxMemory,
			MaxArgs:           c.MaxArgs,
			MaxArgsBytes:      max(c.MaxArgsBytes, 1), // 0: the kernel and the snapshot read none
			MaxEventArgsBytes: c.Traces.MaxEventArgsBytes,
			BuildSpans:        c.MaxBatch,
		},
		mapper:       pdatamap.Mapper{IncludeThreads: c.ThreadEvents, MaxArgs: c.MaxArgs},
		redact:       red,
		snapshotArgs: c.MaxArgsBytes,
		nice:         c.Nice,
	}, nil
}

// shedEvents maps pressure::shed to event types.
func (c *Config) shedEvents() []event.Type {
	var evs []event.Type
	for _, e := range c.Pressure.Shed {
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

func (c *Config) bpfEvents() []event.Type {
	var evs []event.Type
	for _, e := range c.Events {
		switch e {
		case EventFork:
			evs = append(evs, event.Fork)
		case EventExec:
			evs = append(evs, event.Exec)
		case EventExit:
			evs = append(evs, event.Exit)
		}
	}
	if c.ThreadEvents {
		evs = append(evs, event.ThreadStart, event.ThreadExit)
	}
	return evs
}
