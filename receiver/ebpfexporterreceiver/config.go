// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package ebpfexporterreceiver

import (
	"fmt"
	"time"

	"go.opentelemetry.io/collector/scraper/scraperhelper"

	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/ebpfexporter"
)

// minCollectionInterval keeps map reads from becoming a busy loop: every
// collection walks every map of every config.
const minCollectionInterval = 100 * time.Millisecond

// Config is the ebpf_exporter receiver's configuration:
//
//	ebpf_exporter:
//	  config_dir: /etc/ebpf_exporter   # <name>.yaml next to <name>.bpf.o, as --config.dir
//	  names: [biolatency, timers]      # as --config.names
//	  collection_interval: 10s         # scraperhelper: also initial_delay, timeout
//	  max_series: 50000                # decoded keys and perf series held, all configs
//	  max_memory: 33554432             # bytes charged for them
//	  max_queued_spans: 8192           # spans waiting for the traces pipeline
type Config struct {
	scraperhelper.ControllerConfig `mapstructure:",squash"`
	ebpfexporter.Config            `mapstructure:",squash"`
}

func createDefaultConfig() *Config {
	cc := scraperhelper.NewDefaultControllerConfig()
	cc.CollectionInterval = 10 * time.Second
	return &Config{ControllerConfig: cc, Config: ebpfexporter.Config{
		MaxSeries:      ebpfexporter.DefaultMaxSeries,
		MaxMemory:      ebpfexporter.DefaultMaxMemory,
		MaxQueuedSpans: ebpfexporter.DefaultMaxQueuedSpans,
	}}
}

// Validate checks what the embedded configs do not: the collection
// interval's floor. (confmap validates the embedded ControllerConfig and
// ebpfexporter.Config themselves: config_dir, names.)
func (c *Config) Validate() error {
	if c.CollectionInterval < minCollectionInterval {
		return fmt.Errorf("collection_interval: %s is too short; use at least %s", c.CollectionInterval, minCollectionInterval)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("timeout: %s is negative; use 0 or a positive duration", c.Timeout)
	}
	return nil
}
