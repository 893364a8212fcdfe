// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package rpcgraphconnector

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Config is the rpcgraph connector's configuration.
type Config struct {
	// NodeAttributes name each end of a call: the values of those of these
	// attributes that the span has (its own attributes first, then its
	// resource's), joined by "/". A span with none of them is not paired
	// (counted as unnamed).
	NodeAttributes []string `mapstructure:"node_attributes"`
	// MaxNodeLength bounds a node's name in bytes; a span whose node is
	// longer is not paired (counted as node_too_long).
	MaxNodeLength int `mapstructure:"max_node_length"`
	// Store bounds the spans waiting for the other end of their call.
	Store StoreConfig `mapstructure:"store"`
	// MaxEdges bounds the (client, server) pairs counted; calls of a new
	// edge beyond it are counted as edges_full.
	MaxEdges int `mapstructure:"max_edges"`
	// MetricsExpiration forgets an edge with no call paired for this long:
	// its series are no longer exported and it no longer takes one of
	// MaxEdges.
	MetricsExpiration time.Duration `mapstructure:"metrics_expiration"`
	// LatencyHistogramBuckets are the upper bounds of the duration
	// histograms' buckets, ascending.
	LatencyHistogramBuckets []time.Duration `mapstructure:"latency_histogram_buckets"`
	// MetricsFlushInterval is how often the cumulative metrics are sent on.
	MetricsFlushInterval time.Duration `mapstructure:"metrics_flush_interval"`
}

// StoreConfig bounds the spans waiting for their call's other end.
type StoreConfig struct {
	// TTL is how long a span waits; then it is counted as expired.
	TTL time.Duration `mapstructure:"ttl"`
	// MaxItems is the most calls waiting at once; a span beyond it is
	// counted as store_full.
	MaxItems int `mapstructure:"max_items"`
	// MaxItemsPerNode is the most calls waiting at once whose first span
	// seen names one node; a span beyond it is counted as node_store_full.
	MaxItemsPerNode int `mapstructure:"max_items_per_node"`
}

// semconvRPCBuckets are the RPC duration metrics' explicit bucket
// boundaries of the semantic conventions (v1.43.0, rpc.server.call.duration
// and rpc.client.call.duration), in seconds.
var semconvRPCBuckets = []time.Duration{
	5 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	75 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	750 * time.Millisecond, time.Second, 2500 * time.Millisecond, 5 * time.Second,
	7500 * time.Millisecond, 10 * time.Second,
}

func createDefaultConfig() *Config {
	return &Config{
		NodeAttributes:          []string{"service.name"},
		MaxNodeLength:           1024,
		Store:                   StoreConfig{TTL: 2 * time.Second, MaxItems: 10000, MaxItemsPerNode: 1000},
		MaxEdges:                10000,
		MetricsExpiration:       5 * time.Minute,
		LatencyHistogramBuckets: slices.Clone(semconvRPCBuckets),
		MetricsFlushInterval:    15 * time.Second,
	}
}

// Validate names every bad field.
func (c *Config) Validate() error {
	var errs []error
	if len(c.NodeAttributes) == 0 {
		errs = append(errs, errors.New("node_attributes: at least one attribute"))
	}
	for i, a := range c.NodeAttributes {
		if a == "" {
			errs = append(errs, fmt.Errorf("node_attributes[%d]: empty", i))
		}
	}
	if c.MaxNodeLength < 1 || c.MaxNodeLength > 1<<16 {
		errs = append(errs, fmt.Errorf("max_node_length: %d, must be 1 to %d", c.MaxNodeLength, 1<<16))
	}
	if c.Store.TTL <= 0 {
		errs = append(errs, fmt.Errorf("store::ttl: %v, must be positive", c.Store.TTL))
	}
	if c.Store.MaxItems < 1 || c.Store.MaxItems > 1<<24 {
		errs = append(errs, fmt.Errorf("store::max_items: %d, must be 1 to %d", c.Store.MaxItems, 1<<24))
	}
	if c.Store.MaxItemsPerNode < 1 || c.Store.MaxItemsPerNode > 1<<24 {
		errs = append(errs, fmt.Errorf("store::max_items_per_node: %d, must be 1 to %d", c.Store.MaxItemsPerNode, 1<<24))
	}
	if c.MaxEdges < 1 || c.MaxEdges > 1<<20 {
		errs = append(errs, fmt.Errorf("max_edges: %d, must be 1 to %d", c.MaxEdges, 1<<20))
	}
	if c.MetricsExpiration < c.MetricsFlushInterval {
		errs = append(errs, fmt.Errorf("metrics_expiration: %v, at least metrics_flush_interval (%v)", c.MetricsExpiration, c.MetricsFlushInterval))
	}
	if len(c.LatencyHistogramBuckets) == 0 {
		errs = append(errs, errors.New("latency_histogram_buckets: at least one bound"))
	}
	for i := 1; i < len(c.LatencyHistogramBuckets); i++ {
		if c.LatencyHistogramBuckets[i] <= c.LatencyHistogramBuckets[i-1] {
			errs = append(errs, fmt.Errorf("latency_histogram_buckets[%d]: %v, must be above %v", i, c.LatencyHistogramBuckets[i], c.LatencyHistogramBuckets[i-1]))
		}
	}
	if c.MetricsFlushInterval < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("metrics_flush_interval: %v, at least 100ms", c.MetricsFlushInterval))
	}
	return errors.Join(errs...)
}
