// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:generate ../../.tools/mdatagen metadata.yaml

// Package rpcgraphconnector is the `rpcgraph` connector (traces to
// metrics): it pairs the CLIENT and the SERVER span of each call (same trace,
// the server span the child of the client span), names each end by the
// configured node attributes, and counts the calls, the failed calls and
// both ends' durations per edge (client node, server node) in the series that
// Tempo's and contrib's service graphs use (traces_service_graph_request_*),
// so Grafana's service graph view reads them. It stands in for contrib's
// servicegraph connector, which the module proxy this project builds
// against does not serve.
package rpcgraphconnector
