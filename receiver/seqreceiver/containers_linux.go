// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package seqreceiver

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/cgroups"
)

// startCgroups finds the cgroup v2 hierarchy, whose directories' inodes are
// the events' cgroup ids. Without one, records keep seq.cgroup.id only.
func (r *seqReceiver) startCgroups() {
	res, err := cgroups.NewResolver(cgroups.Options{})
	if err != nil {
		r.set.Logger.Warn("seq receiver: no container identity: cgroup ids are not resolved to paths", zap.Error(err))
		return
	}
	r.cgroups = res
	r.mapper.Cgroups = res.Resolve
	root, anchored := res.Root()
	if !anchored {
		r.set.Logger.Warn("seq receiver: no container identity: the cgroup2 mount shows a cgroup namespace's subtree whose place in the hierarchy is unknown, "+
			"so no path can be trusted to name a container or pod; mount the host's cgroup hierarchy (hostPath /sys/fs/cgroup) or run in the host's cgroup namespace",
			zap.String("cgroup2", res.Mount()), zap.String("root", root))
	}
	r.set.Logger.Info("seq receiver: resolving cgroup ids", zap.String("cgroup2", res.Mount()), zap.String("root", root))
}

// cgroupsOf is the model's and the mapper's resolver, or nil.
func (r *seqReceiver) cgroupsOf() func(uint64) *cgroups.Info {
	if r.cgroups == nil {
		return nil
	}
	return r.cgroups.Resolve
}

// inContainers reports whether a batch may hold records of containers, to
// split into a resource per container (splitLogs, splitSpans).
func (r *seqReceiver) inContainers() bool {
	return r.cgroups != nil && r.cgroups.SawContainers()
}

func (r *seqReceiver) registerContainerTelemetry() error {
	return errors.Join(
		r.tb.RegisterReceiverSeqArgsRedactedCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(r.modelStats.Load().Redacted))
			return nil
		}),
		r.tb.RegisterReceiverSeqCgroupMissesCallback(func(_ context.Context, o metric.Int64Observer) error {
			if r.cgroups != nil {
				o.Observe(int64(r.cgroups.Stats().Misses))
			}
			return nil
		}),
		r.tb.RegisterReceiverSeqCgroupsUntrustedCallback(func(_ context.Context, o metric.Int64Observer) error {
			if r.cgroups == nil {
				return nil
			}
			for reason, n := range r.cgroups.Stats().Untrusted {
				o.Observe(int64(n), metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", reason))))
			}
			return nil
		}),
		r.tb.RegisterReceiverSeqCgroupsCachedCallback(func(_ context.Context, o metric.Int64Observer) error {
			if r.cgroups != nil {
				o.Observe(int64(r.cgroups.Stats().Cached))
			}
			return nil
		}),
	)
}
