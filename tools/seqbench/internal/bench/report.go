//go:build linux

package bench

import (
	"fmt"
	"strings"

	"github.com/otelcol-seq/otelcol-seq/internal/kernelfeatures"
	"github.com/otelcol-seq/otelcol-seq/internal/ring/transport"
	"github.com/otelcol-seq/otelcol-seq/internal/sequencer"
)

// Markdown is the results as a Markdown table, with a line on the settings.
func Markdown(results []Result, c Config) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s per run; buffers %d MiB per transport; the receiver's loader and readers: ring buffer wake-up every %d tickets or at 1/4 full, perf wakeup_events %d, ring buffer reorder stage %d records / %v, perf reorder stage until every CPU's stream is past the ticket (an empty buffer: %v); park timeout %v.\n\n",
		c.Duration, c.BufferBytes>>20, sequencer.RingBufWakeupTickets, transport.PerfWakeupEvents, max(1024, c.BufferBytes/128), transport.ReorderWait, transport.PerfQuietGrace, c.Poll)
	fmt.Fprintf(&b, "The %s.\n\n", kernelfeatures.Summary(kernelfeatures.Mmapable, kernelfeatures.RingBuf, kernelfeatures.Atomics, kernelfeatures.TPBTF))
	b.WriteString("| transport | workload | CPUs | issued | delivered | lost | unaccounted | capture % | ticket-order viol. raw → reordered | causality viol. raw → reordered | ts inversions raw → reordered | reorder gave up / late | BPF ns/event | consumer CPU s / M events | events/s | workload ops/s traced (untraced) | slowdown % |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range results {
		if r.Error != "" && r.Issued == 0 {
			fmt.Fprintf(&b, "| %s | %s | %d | error: %s |||||||||||||\n", r.Transport, r.Workload, r.CPUs, strings.ReplaceAll(r.Error, "|", "/"))
			continue
		}
		reorder := "—"
		if !Transport(r.Transport).emits() {
			what := "hooks only"
			if r.Transport == string(Stage) {
				what = "hooks + staging"
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %d | | | | — (%s, nothing emitted) | | | | | %.0f per run | | | %s%s | %.1f |\n",
				r.Transport, r.Workload, r.CPUs, r.Issued, what, r.BPFNsPerRun, si(r.WorkloadOpsPerS), untracedOf(r), r.SlowdownPct)
			continue
		}
		if Transport(r.Transport).reordered() {
			reorder = fmt.Sprintf("%d / %d", r.ReorderDeclared, r.ReorderLate)
		}
		arrow := func(a, b uint64) string {
			if !Transport(r.Transport).reordered() {
				return fmt.Sprintf("%d", a)
			}
			return fmt.Sprintf("%d → %d", a, b)
		}
		causality := arrow(r.CausalityRaw, r.CausalityAfter)
		if r.Workload == string(Synth) {
			causality = "n/a"
		}
		untraced := untracedOf(r)
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %d | %d | %s | %s | %s | %s | %s | %.0f | %.2f | %s | %s%s | %.1f |\n",
			r.Transport, r.Workload, r.CPUs, r.Issued, r.Delivered, r.Lost, r.Unaccounted, pct(r.CapturePct),
			arrow(r.TicketOrderRaw, r.TicketOrderAfter), causality, arrow(r.TimeInversionRaw, r.TimeInversionAfter),
			reorder, r.BPFNsPerEvent, r.ConsumerCPUPerM, si(r.EventsPerSec), si(r.WorkloadOpsPerS), untraced, r.SlowdownPct)
	}
	return b.String()
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
