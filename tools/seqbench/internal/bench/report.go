//go:build linux

package bench

import (
	"errors"
	"fmt"
	"strings"

	"github.com/otelcol-seq/otelcol-seq/internal/kernelfeatures"
	"github.com/otelcol-seq/otelcol-seq/internal/ring/transport"
	"github.com/otelcol-seq/otelcol-seq/internal/sequencer"
)

// Markdown is the results as a Markdown table, with lines on the settings
// and on what each column measures, and below it the error of every row
// that erred.
func Markdown(results []Result, c Config) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s per run; buffers %d MiB per transport; the receiver's loader and readers: ring buffer wake-up every %d tickets or at 1/4 full, perf wakeup_events %d, ring buffer reorder stage %d records / %v, perf reorder stage until every CPU's stream is past the ticket (an empty buffer: %v); park timeout %v.\n\n",
		c.Duration, c.BufferBytes>>20, sequencer.RingBufWakeupTickets, transport.PerfWakeupEvents, max(1024, c.BufferBytes/128), transport.ReorderWait, transport.PerfQuietGrace, c.Poll)
	fmt.Fprintf(&b, "The %s.\n\n", kernelfeatures.Summary(kernelfeatures.Mmapable, kernelfeatures.RingBuf, kernelfeatures.Atomics, kernelfeatures.TPBTF))
	b.WriteString("ringbuf and perfbuf are the receiver's transports: the sequencer's programs (a ticket, staging, a copy out) and its reorder stage. " +
		"ringbuf-native and perfbuf-native are the same records as their users write them (reserve, fill, submit with flags 0; fill a per-CPU record, output), " +
		"read with cilium/ebpf's readers, one read per record (perf: a wake-up per sample); they carry no ticket (ticket order n/a), and issued is what their programs tried to emit. " +
		"Timestamp inversions and causality (a process's fork before its exec before its exit) are in arrival order, and after the reorder stage where there is one; " +
		"perf buffers promise no order across CPUs: perfbuf-native's are raw.\n\n")
	b.WriteString("| transport | workload | CPUs | issued | delivered | lost | unaccounted | capture % | ticket-order viol. raw → reordered | causality viol. raw → reordered | ts inversions raw → reordered | reorder gave up / late | BPF ns/event | consumer CPU s / M events | events/s | workload ops/s traced (untraced) | slowdown % |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	var errs []Result
	for _, r := range results {
		name := r.Transport
		if r.Error != "" {
			errs = append(errs, r)
			if r.Issued == 0 {
				fmt.Fprintf(&b, "| %s | %s | %d | error: %s |||||||||||||\n", r.Transport, r.Workload, r.CPUs, strings.ReplaceAll(r.Error, "|", "/"))
				continue
			}
			name += " (error: below)"
		}
		tr := Transport(r.Transport)
		if !tr.emits() {
			what := "hooks only"
			if tr == Stage {
				what = "hooks + staging"
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %d | | | | — (%s, nothing emitted) | | | | | %.0f per run | | | %s%s | %.1f |\n",
				name, r.Workload, r.CPUs, r.Issued, what, r.BPFNsPerRun, si(r.WorkloadOpsPerS), untracedOf(r), r.SlowdownPct)
			continue
		}
		reorder := "—"
		if tr.reordered() {
			reorder = fmt.Sprintf("%d / %d", r.ReorderDeclared, r.ReorderLate)
		}
		arrow := func(a, b uint64) string {
			if !tr.reordered() {
				return fmt.Sprintf("%d", a)
			}
			return fmt.Sprintf("%d → %d", a, b)
		}
		tickets := "n/a"
		if tr.ticketed() {
			tickets = arrow(r.TicketOrderRaw, r.TicketOrderAfter)
		}
		causality := arrow(r.CausalityRaw, r.CausalityAfter)
		if r.Workload == string(Synth) {
			causality = "n/a"
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %d | %d | %s | %s | %s | %s | %s | %.0f | %.2f | %s | %s%s | %.1f |\n",
			name, r.Workload, r.CPUs, r.Issued, r.Delivered, r.Lost, r.Unaccounted, pct(r.CapturePct),
			tickets, causality, arrow(r.TimeInversionRaw, r.TimeInversionAfter),
			reorder, r.BPFNsPerEvent, r.ConsumerCPUPerM, si(r.EventsPerSec), si(r.WorkloadOpsPerS), untracedOf(r), r.SlowdownPct)
	}
	if len(errs) > 0 {
		b.WriteString("\nErrors:\n\n")
		for _, r := range errs {
			fmt.Fprintf(&b, "- %s %s %d CPU: %s\n", r.Transport, r.Workload, r.CPUs, r.Error)
		}
	}
	return b.String()
}

// Failures joins the errors of the rows that erred; nil when none did. A
// run with any fails (seqbench exits non-zero), its table still written.
func Failures(results []Result) error {
	var errs []error
	for _, r := range results {
		if r.Error != "" {
			errs = append(errs, fmt.Errorf("%s %s %d CPU: %s", r.Transport, r.Workload, r.CPUs, r.Error))
		}
	}
	return errors.Join(errs...)
}

// pct prints a capture percentage without rounding a loss up to 100.
func pct(p float64) string {
	if p == 100 {
		return "100"
	}
	s := fmt.Sprintf("%.3f", p)
	if s == "100.000" {
		s = "99.999"
	}
	return s
}

// si prints n with a k or M suffix.
func si(n float64) string {
	switch {
	case n >= 1e6:
		return fmt.Sprintf("%.2f M", n/1e6)
	case n >= 1e4:
		return fmt.Sprintf("%.1f k", n/1e3)
	}
	return fmt.Sprintf("%.0f", n)
}

func untracedOf(r Result) string {
	if r.UntracedOpsPerS > 0 {
		return fmt.Sprintf(" (%s)", si(r.UntracedOpsPerS))
	}
	return ""
}
