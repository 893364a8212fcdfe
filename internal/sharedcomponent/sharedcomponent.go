// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Package sharedcomponent lets one receiver instance serve every pipeline it
// is listed in. The collector creates a receiver once per signal (logs,
// traces, metrics) it appears in; a receiver that loads BPF programs or runs
// processes must still do that once. Map hands out one instance per
// configuration, started by the first Start and stopped by the first
// Shutdown (the collector shuts down all receivers together), as contrib's
// internal/sharedcomponent does.
package sharedcomponent

import (
	"context"
	"sync"

	"go.opentelemetry.io/collector/component"
)

// Map holds the live instances, keyed by their configuration.
type Map[K comparable, T component.Component] struct {
	mu sync.Mutex
	m  map[K]*Component[T]
}

// Component is one shared instance; it is the component.Component handed to
// the collector for each signal.
type Component[T component.Component] struct {
	C             T
	start, finish sync.Once
	startErr      error
	shutdownErr   error
	remove        func()
}

// LoadOrStore returns the instance for key, creating it with create the first time.
func (s *Map[K, T]) LoadOrStore(key K, create func() (T, error)) (*Component[T], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.m[key]; ok {
		return e, nil
	}
	c, err := create()
	if err != nil {
		return nil, err
	}
	if s.m == nil {
		s.m = map[K]*Component[T]{}
	}
	e := &Component[T]{C: c}
	e.remove = func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.m, key)
	}
	s.m[key] = e
	return e, nil
}

// Start starts the instance once, whichever signal's receiver calls it first.
func (e *Component[T]) Start(ctx context.Context, host component.Host) error {
	e.start.Do(func() { e.startErr = e.C.Start(ctx, host) })
	return e.startErr
}

// Shutdown stops the instance once and forgets it, so that a collector that
// reloads its configuration creates a fresh one.
func (e *Component[T]) Shutdown(ctx context.Context) error {
	e.finish.Do(func() {
		e.shutdownErr = e.C.Shutdown(ctx)
		e.remove()
	})
	return e.shutdownErr
}
